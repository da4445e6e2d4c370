//! Serves an embedded API server until Ctrl-C, for kubectl:
//!
//! ```sh
//! cargo run -p kubewasm-devcluster --example serve -- [DATA_DIR]
//! export KUBECONFIG=...   # the path it prints
//! kubectl api-resources
//! ```

use kubewasm_devcluster::{DevCluster, Options};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data_dir = std::env::args_os().nth(1).map(Into::into);
    let cluster = DevCluster::start(Options { data_dir, ..Options::default() }).await?;
    println!("export KUBECONFIG={}", cluster.kubeconfig_path().display());
    tokio::signal::ctrl_c().await?;
    cluster.shutdown().await;
    Ok(())
}
