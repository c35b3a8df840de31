//! A PostgreSQL database per test run, on the cluster `BUILDAT_TEST_PG`
//! names (`scripts/pg-cluster start` prints it; `.ci/run` starts one): the
//! crash test's and the server's tests' worlds stored in PostgreSQL.
//!
//! Owns: reading `BUILDAT_TEST_PG` (unset: `None` after a loud note, but a
//! panic under CI, `CI=true`, where PostgreSQL must be tested), making a
//! fresh database and dropping it when done. Does not own: the world's
//! tables (voxelworld's `storage/postgresql.rs`; this side only reads them,
//! in `world_check`). Used by the harness, the server's tests, and
//! voxelworld's storage tests and world bench.

use anyhow::Context;

/// The variable naming the test cluster (a URL to any database on it).
pub const TEST_PG: &str = "BUILDAT_TEST_PG";

/// The test cluster's URL; `None` (after a loud note on stderr, past the
/// test harness's capture) when unset outside CI; a panic when unset in CI.
pub fn test_cluster() -> Option<String> {
    match std::env::var(TEST_PG) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !in_ci,
                "{TEST_PG} is not set under CI: the PostgreSQL tests must run \
                 (.ci/run starts scripts/pg-cluster)"
            );
            // Past the test harness's capture (which takes only the print
            // macros), once per process.
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "\n!!! SKIPPING the PostgreSQL tests: {TEST_PG} is not set \
                     (eval \"$(scripts/pg-cluster start)\" to run them) !!!\n"
                );
            });
            None
        }
    }
}

/// `url` naming the database `name` instead.
pub fn with_database(url: &str, name: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (url, None),
    };
    let head = match head.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
            format!("{scheme}://{authority}/{name}")
        }
        None => head.to_string(),
    };
    match query {
        Some(query) => format!("{head}?{query}"),
        None => head,
    }
}

/// A fresh database on a cluster, dropped (connections and all) with it.
pub struct TestDatabase {
    /// Its URL, for `--set voxelworld.storage=...`.
    pub url: String,
    admin: String,
    name: String,
}

impl TestDatabase {
    /// Makes `<prefix>_<pid>_<n>` on the cluster of `admin_url` (dropping
    /// an old one of that name).
    pub fn create(admin_url: &str, prefix: &str) -> anyhow::Result<Self> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut client = postgres::Client::connect(admin_url, postgres::NoTls)
            .with_context(|| format!("connecting to the test cluster ({TEST_PG})"))?;
        // One statement a call: several would be one transaction, which
        // these refuse.
        client.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))?;
        client.batch_execute(&format!("CREATE DATABASE \"{name}\""))?;
        Ok(Self {
            url: with_database(admin_url, &name),
            admin: admin_url.to_string(),
            name,
        })
    }

    /// A database on the test cluster, or `None` when there is none (see
    /// [`test_cluster`]).
    pub fn on_test_cluster(prefix: &str) -> Option<Self> {
        let admin = test_cluster()?;
        Some(Self::create(&admin, prefix).unwrap_or_else(|e| panic!("{e:#}")))
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_database_on_the_same_cluster() {
        assert_eq!(
            with_database("postgresql://me@/postgres?host=/tmp/x&port=5432", "w1"),
            "postgresql://me@/w1?host=/tmp/x&port=5432"
        );
        assert_eq!(
            with_database("postgresql://me:pw@127.0.0.1:5433", "w2"),
            "postgresql://me:pw@127.0.0.1:5433/w2"
        );
    }
}
