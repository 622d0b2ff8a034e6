//! The PostgreSQL listener behind `Wake::postgres`: one connection of its own doing `LISTEN burrow_session_events`, each notification's payload handed to the followers, reconnected after a failure.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{broadcast, mpsc};
use tokio_postgres::{AsyncMessage, NoTls};

/// The longest wait before connecting again.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Listens until `sender` is gone (checked at each notification and each reconnect).
pub(crate) async fn listen(url: String, sender: Weak<broadcast::Sender<Arc<str>>>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        if sender.strong_count() == 0 {
            return;
        }
        match tokio_postgres::connect(&url, NoTls).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = mpsc::unbounded_channel::<String>();
                // The connection is driven here; its notifications go to `rx`.
                let driver = tokio::spawn(async move {
                    let mut messages =
                        futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(AsyncMessage::Notification(n)) => {
                                if tx.send(n.payload().to_owned()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "the session events listener's connection failed");
                                return;
                            }
                        }
                    }
                });
                let listening = client
                    .batch_execute(&format!(
                        "LISTEN {}",
                        burrow_runtime::session::PostgresStore::EVENTS_CHANNEL
                    ))
                    .await;
                match listening {
                    Ok(()) => {
                        backoff = Duration::from_millis(100);
                        // Notifications sent while not listening are lost: everyone looks once.
                        if !notify(&sender, "") {
                            driver.abort();
                            return;
                        }
                        while let Some(payload) = rx.recv().await {
                            if !notify(&sender, &payload) {
                                driver.abort();
                                return;
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "LISTEN on the session store failed"),
                }
                driver.abort();
                drop(client);
            }
            Err(e) => tracing::warn!(error = %e, "the session events listener cannot connect"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Hands `payload` to the followers; false once nobody can receive any more.
fn notify(sender: &Weak<broadcast::Sender<Arc<str>>>, payload: &str) -> bool {
    let Some(sender) = sender.upgrade() else {
        return false;
    };
    // No follower right now is fine: a later one reads the log first.
    let _ = sender.send(Arc::from(payload));
    true
}
