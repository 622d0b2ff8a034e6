//! Shared test helpers: the three kinds of store, the S3 server from the environment, and a private S3 server a test can stop.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use burrow_object_store::object_store::aws::AmazonS3Builder;
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};

use burrow_testkit::{Part, require};

/// The variable `cargo xtask setup` exports with the Python interpreter that has moto.
pub const PYTHON_VAR: &str = "BURROW_S3_PYTHON";

/// The S3 endpoint to test against (`BURROW_S3_ENDPOINT`); the test fails, naming
/// the part, without one. Call it only from a module named `s3`.
pub fn s3_endpoint() -> String {
    require(Part::S3)
}

/// A fresh, unique name ("{what}-{uuid}"), for buckets and key prefixes.
pub fn fresh_name(what: &str) -> String {
    format!("{what}-{}", uuid::Uuid::now_v7().simple())
}

/// A fresh bucket on the S3 server at `endpoint`, so tests never see each
/// other's objects (and the test server, which lists by scanning a whole
/// bucket, stays fast).
pub fn fresh_bucket(endpoint: &str) -> String {
    let bucket = fresh_name("bt");
    ensure_bucket(endpoint, &bucket);
    bucket
}

/// Creates `bucket` on the S3 server at `endpoint` (idempotent).
///
/// An unsigned `PUT /bucket` is enough for the local test server; an
/// existing bucket answers 200 or 409, both fine.
pub fn ensure_bucket(endpoint: &str, bucket: &str) {
    let authority = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut stream =
        TcpStream::connect(authority).expect("connect to the S3 server to create the test bucket");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    write!(stream, "PUT /{bucket} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .expect("send the create-bucket request");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .expect("read the create-bucket answer");
    let status = answer.split_whitespace().nth(1).unwrap_or_default();
    assert!(
        status == "200" || status == "409",
        "creating bucket {bucket} answered {answer:?}"
    );
}

/// An S3 client builder for the test server at `endpoint` (dummy credentials, plain HTTP).
pub fn s3_builder(endpoint: &str) -> AmazonS3Builder {
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id("burrow-test")
        .with_secret_access_key("burrow-test")
}

/// A backend on a fresh bucket, beneath the prefix `what`, with `options`.
///
/// The test server, unlike Amazon S3, takes keys over 1,024 bytes, so the
/// key limit is lifted unless `options` sets one (tests of the limit do).
pub fn s3_backend(endpoint: &str, what: &str, options: ObjectStoreOptions) -> ObjectStoreBackend {
    let bucket = fresh_bucket(endpoint);
    let options = match options.max_key_bytes {
        Some(_) => options,
        None => options.with_max_key_bytes(Some(usize::MAX)),
    };
    let url = format!("s3://{bucket}/{what}");
    ObjectStoreBackend::from_s3_builder(s3_builder(endpoint), &url, options)
        .expect("an S3 backend on the test server")
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("its address").port()
}

/// A private S3 server (the same moto launcher `cargo xtask setup` uses),
/// killed when dropped: for tests that stop the server on purpose.
pub struct PrivateServer {
    child: Child,
    pub endpoint: String,
}

impl PrivateServer {
    /// Starts one on a free port with the interpreter that has moto (`BURROW_S3_PYTHON`,
    /// exported by the setup step that provides Part::S3); panics without it.
    pub fn start() -> PrivateServer {
        let python = std::env::var(PYTHON_VAR)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| {
                panic!(
                    "{PYTHON_VAR} is not set: the setup step that starts the S3 server exports it \
                     with BURROW_S3_ENDPOINT; run `cargo xtask setup`"
                )
            });
        let launcher = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/s3/moto_server.py");
        let port = free_port();
        let child = Command::new(python)
            .args([launcher, "127.0.0.1", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the private S3 server");
        let server = PrivateServer {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the private S3 server did not start listening within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// Stops the server (SIGKILL) and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Lends the conformance suite the store beneath a backend: a file planted past
/// the max file size is put through a second backend on the same store and root
/// whose max file size is above it. Objects have no creation time and the
/// backend keeps no `created_at`, so that hook is left out.
pub struct Objects(pub std::sync::Arc<ObjectStoreBackend>);

impl burrow_conformance::StoreAccess for Objects {
    fn plant(
        &self,
        path: &burrow_backend::VPath,
        bytes: &[u8],
    ) -> std::io::Result<std::sync::Arc<dyn burrow_backend::Backend>> {
        use burrow_backend::Backend;
        let size = u64::try_from(bytes.len()).map_err(std::io::Error::other)?;
        let options = self.0.options().clone().with_max_file_size(size);
        let unlimited = ObjectStoreBackend::with_options(self.0.store().clone(), options)
            .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
        let ctx = burrow_backend::FileContext::for_tenant(burrow_conformance::TENANT);
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(unlimited.write_bytes(&ctx, path, bytes))
        })
        .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
        Ok(self.0.clone())
    }
}
