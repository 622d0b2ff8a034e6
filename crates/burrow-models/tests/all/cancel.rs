//! Cancellation drops the connection: a server that streams a few events and then keeps its socket open sees the client close it once the model's stream is dropped (OpenAI chat and Anthropic; both go through the shared HTTP layer).

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpListener;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use burrow_models::{ClientConfig, RetryPolicy};
use burrow_runtime::message::Message;
use burrow_runtime::model::{EventStream, PartKind, StreamEvent};
use futures::StreamExt;

use super::support::*;

/// How long the server waits for the close before it reports the
/// connection still open (a guard against hanging, not a speed claim).
const CLOSE_GUARD: Duration = Duration::from_secs(30);

/// What the server saw after its last event.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// The client closed the connection (a read returned 0 or the socket was reset).
    Closed,
    /// Nothing happened within [`CLOSE_GUARD`].
    StillOpen,
}

/// A one-connection server on 127.0.0.1 that answers any request with a
/// chunked `text/event-stream` of `events` and never ends it, then waits
/// for the client to close the socket.
fn endless_server(events: &'static [&'static str]) -> (String, JoinHandle<io::Result<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let handle = thread::spawn(move || {
        let (mut conn, _) = listener.accept()?;
        conn.set_nodelay(true)?;
        // The request: its head, then as many body bytes as it announced.
        let mut reader = BufReader::new(conn.try_clone()?);
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Err(io::Error::new(ErrorKind::UnexpectedEof, "no request"));
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        conn.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        )?;
        for event in events {
            conn.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes())?;
        }
        conn.flush()?;
        // No terminating chunk: the answer never ends. Only the client can end it now.
        conn.set_read_timeout(Some(CLOSE_GUARD))?;
        let mut buf = [0u8; 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(Seen::Closed),
                Ok(_) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                    ) =>
                {
                    return Ok(Seen::Closed);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(Seen::StillOpen);
                }
                Err(e) => return Err(e),
            }
        }
    });
    (url, handle)
}

/// A configuration with no client-side timeout (so only the drop can close
/// the connection) and no retries.
fn no_timeouts(url: &str) -> ClientConfig {
    let mut config = ClientConfig::new(url, TEST_KEY);
    config.request_timeout = None;
    config.idle_timeout = None;
    config.retry = RetryPolicy::none();
    config
}

/// Reads the first event of `stream`, drops the stream while the model (and
/// so its HTTP client and connection pool) stays alive, and returns that
/// event and what the server saw.
async fn first_event_then_drop(
    mut stream: EventStream,
    server: JoinHandle<io::Result<Seen>>,
) -> (StreamEvent, Seen) {
    let first = stream
        .next()
        .await
        .expect("the stream has a first event")
        .expect("the first event is not an error");
    drop(stream);
    let seen = tokio::task::spawn_blocking(move || server.join())
        .await
        .expect("the waiting task ran")
        .expect("the server thread did not panic")
        .expect("the server read the request and wrote its events");
    (first, seen)
}

#[cfg(feature = "openai")]
#[tokio::test]
async fn dropping_an_openai_chat_stream_closes_its_connection() {
    use burrow_models::openai::OpenAiChat;
    use burrow_runtime::model::Model;

    const EVENTS: &[&str] = &[
        "data: {\"id\":\"chatcmpl-cancel\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"chatcmpl-cancel\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"chatcmpl-cancel\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},\"finish_reason\":null}]}\n\n",
    ];
    let (url, server) = endless_server(EVENTS);
    let model = OpenAiChat::new("gpt-4.1", no_timeouts(&url)).unwrap();
    let messages = [Message::user("hi")];
    let stream = model.stream(plain(&messages)).await.unwrap();
    let (first, seen) = first_event_then_drop(stream, server).await;
    assert_eq!(
        first,
        StreamEvent::PartStart {
            index: 0,
            part: PartKind::Text
        }
    );
    assert_eq!(seen, Seen::Closed, "the connection outlived the stream");
    drop(model);
}

#[cfg(feature = "anthropic")]
#[tokio::test]
async fn dropping_an_anthropic_stream_closes_its_connection() {
    use burrow_models::anthropic::AnthropicModel;
    use burrow_runtime::model::Model;

    const EVENTS: &[&str] = &[
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_cancel\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
        "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    ];
    let (url, server) = endless_server(EVENTS);
    let model = AnthropicModel::new("claude-test", no_timeouts(&url)).unwrap();
    let messages = [Message::user("hi")];
    let stream = model.stream(plain(&messages)).await.unwrap();
    let (first, seen) = first_event_then_drop(stream, server).await;
    // `message_start`'s usage comes first (it commits nothing, so the driver
    // read on to the text part before handing it out).
    assert!(
        matches!(&first, StreamEvent::Usage(u) if u.input_tokens == Some(25)),
        "{first:?}"
    );
    assert_eq!(seen, Seen::Closed, "the connection outlived the stream");
    drop(model);
}
