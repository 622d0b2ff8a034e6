//! The benches' PostgreSQL stores: each in a fresh schema of the test database (`BURROW_POSTGRES_URL`), dropped after.

use std::sync::Arc;

use burrow_runtime::session::SessionStore;

/// A PostgreSQL store in a fresh schema (dropped by [`drop_schema`]), or `None` when `BURROW_POSTGRES_URL` is not set.
pub fn fresh_store(rt: &tokio::runtime::Runtime) -> Option<(Arc<dyn SessionStore>, String)> {
    use burrow_runtime::session::{PostgresOptions, PostgresStore, SystemClock};
    let Ok(url) = std::env::var("BURROW_POSTGRES_URL") else {
        eprintln!("BURROW_POSTGRES_URL is not set (run `cargo xtask setup`); not measured");
        return None;
    };
    let schema = format!("bench_{}", uuid::Uuid::now_v7().simple());
    let store = rt
        .block_on(PostgresStore::connect_with(
            &url,
            Arc::new(SystemClock),
            PostgresOptions::default().with_schema(&schema),
        ))
        .unwrap();
    Some((Arc::new(store), schema))
}

pub fn drop_schema(rt: &tokio::runtime::Runtime, schema: &str) {
    let url = std::env::var("BURROW_POSTGRES_URL").unwrap();
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await
            .unwrap();
    });
}
