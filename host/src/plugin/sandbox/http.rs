//! `wasi:http` without a network: every outgoing request fails with `HTTP request
//! denied` before any connection is made, and the host logs what was asked. Plugins
//! built with jco's defaults import `wasi:http` (for `fetch`), so it is linked; it
//! lets them load, not connect. Outbound HTTP granted by the operator belongs here.

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use super::logging::TARGET;
use crate::plugin::contract::bindings::kubewasm::reconciler::http as contract;

/// One call's `wasi:http` context.
pub(crate) struct Http {
    ctx: WasiHttpCtx,
    hooks: NoNetwork,
}

impl Http {
    /// Denies every request of `plugin`.
    pub(crate) fn denied(plugin: &str) -> Self {
        Self { ctx: WasiHttpCtx::new(), hooks: NoNetwork { plugin: plugin.to_string() } }
    }

    /// The view `wasmtime-wasi-http` works on, over the store's resource table.
    pub(crate) fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView { ctx: &mut self.ctx, table, hooks: &mut self.hooks }
    }
}

/// Links `wasi:http` (only the HTTP interfaces: WASI itself is linked apart).
pub(crate) fn add_to_linker<T: WasiHttpView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(linker)
}

struct NoNetwork {
    plugin: String,
}

type Finished = Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>;
type Sent = Box<
    dyn Future<Output = Result<(http::Response<wasmtime_wasi_http::WasiBody>, Finished), wasmtime_wasi_http::Error>>
        + Send,
>;

impl WasiHttpHooks for NoNetwork {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _done: Finished,
    ) -> Sent {
        tracing::warn!(
            target: TARGET,
            plugin = %self.plugin,
            method = %request.method(),
            uri = %request.uri(),
            "outgoing HTTP request denied: plugins have no network"
        );
        Box::new(std::future::ready(Err(wasmtime_wasi_http::Error::HttpRequestDenied)))
    }
}

/// The contract's own `http.send`, denied like `wasi:http`.
impl contract::Host for Http {
    fn send(&mut self, request: contract::HttpRequest) -> Result<contract::HttpResponse, contract::HttpError> {
        tracing::warn!(
            target: TARGET,
            plugin = %self.hooks.plugin,
            method = %request.method,
            "outgoing HTTP request denied: plugins have no network"
        );
        Err(contract::HttpError::Denied(format!("{}: plugins have no network", request.url)))
    }
}
