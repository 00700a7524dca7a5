//! WebSocket clients for the live routes' tests (tokio-tungstenite): an upgrade with the headers a
//! vendor's client sends, the status and body of a refused one, the next JSON message.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

use super::TestApp;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Upgrades `path` (with its query) on the test server, sending `headers`.
pub async fn connect(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(Socket, tungstenite::handshake::client::Response), tungstenite::Error> {
    let url = format!("{}{path}", app.base.replacen("http", "ws", 1));
    let mut request = url.into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    tokio_tungstenite::connect_async(request).await
}

/// The refusal of an upgrade: its HTTP status and JSON body (panics when it was accepted).
pub async fn refused(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    match connect(app, path, headers).await {
        Ok(_) => panic!("the upgrade of {path} was accepted"),
        Err(tungstenite::Error::Http(response)) => {
            let status = response.status().as_u16();
            let body = response.body().clone().unwrap_or_default();
            (status, serde_json::from_slice(&body).unwrap())
        }
        Err(other) => panic!("{other}"),
    }
}

/// The next text message as JSON; `None` at the close, an error, or after `within` of silence.
pub async fn next_json<S>(socket: &mut S, within: Duration) -> Option<Value>
where
    S: futures_util::Stream<Item = Result<Message, tungstenite::Error>> + Unpin,
{
    loop {
        match tokio::time::timeout(within, socket.next()).await.ok()?? {
            Ok(Message::Text(text)) => return Some(serde_json::from_str(text.as_str()).unwrap()),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}
