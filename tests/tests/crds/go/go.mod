module kubewasm.dev/tests/crds

go 1.24

require kubewasm.dev/sdk v0.0.0

replace kubewasm.dev/sdk => ../../../../guest-sdk/go
