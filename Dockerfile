# syntax=docker/dockerfile:1
#
# Two images from one build:
#   the host (default target):  docker build -t ghcr.io/kubewasm/kubewasm:dev .
#   the example plugins:        docker build --target plugins -t ghcr.io/kubewasm/kubewasm-plugins:dev .
# The plugins image holds only NAME.wasm files at its root; deploy/deployment.yaml
# mounts it as an image volume at /plugins.
#
# Not built in CI: the machines that run the tests have no Docker engine and no
# access to container registries. tests/tests/deploy checks that this file and
# deploy/ agree (user, port, plugin directory, the plugins built).
# The host is built without the `dev` feature: no embedded API server in production
# (`cli` named: the binary needs it, and cargo skips a binary whose features are off).
# The `dist` profile: link-time optimised, fewer pages resident in every process.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# rust-toolchain.toml pins the toolchain and lists the wasm32-wasip2 target;
# rustup adds a listed target only when it installs the toolchain: ask for it too.
RUN rustup toolchain install && rustup target add wasm32-wasip2
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked -p kubewasm --no-default-features --features cli \
 && cargo build --profile plugin --locked --target wasm32-wasip2 -p demo-application -p foo -p pod-services \
 && mkdir -p /out/plugins \
 && cp target/dist/kubewasm /out/kubewasm \
 && for p in demo-application foo pod-services; do \
      cp "target/wasm32-wasip2/plugin/$(echo $p | tr - _).wasm" "/out/plugins/$p.wasm"; \
    done

# The example plugins, nothing else.
FROM scratch AS plugins
COPY --from=build /out/plugins/ /

# The host: glibc and libgcc from distroless, no shell, runs as uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot AS host
COPY --from=build /out/kubewasm /usr/local/bin/kubewasm
USER 65532:65532
# Probes and /metrics (--health-addr); the admission and conversion webhooks of the
# plugins that declare any (HTTPS).
EXPOSE 8080 9443
ENTRYPOINT ["/usr/local/bin/kubewasm"]
CMD ["run", "--plugins", "/plugins"]
