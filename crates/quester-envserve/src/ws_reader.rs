//! Reading a WebSocket while an env call runs: the transport answers the client's keepalive
//! pings only while it is read, and OpenEnv's client gives up on a connection whose pings go
//! unanswered (20 s + 20 s by default), so a slow step must not stop the reading. Messages that
//! arrive meanwhile (a client may pipeline) wait in a queue, in order.

use axum::extract::ws::{Message, WebSocket};
use std::collections::VecDeque;
use std::future::Future;

/// Messages held while a call runs, at most; beyond, reading pauses (back-pressure) until the
/// call ends.
const MAX_QUEUED: usize = 64;

pub struct Reader<'a> {
    pub socket: &'a mut WebSocket,
    queued: VecDeque<Result<Message, axum::Error>>,
    /// The client closed or the connection broke while a call ran.
    gone: bool,
}

impl<'a> Reader<'a> {
    pub fn new(socket: &'a mut WebSocket) -> Reader<'a> {
        Reader {
            socket,
            queued: VecDeque::new(),
            gone: false,
        }
    }

    /// The next message, queued ones first; `None` once the client is gone.
    pub async fn next(&mut self) -> Option<Result<Message, axum::Error>> {
        if let Some(m) = self.queued.pop_front() {
            return Some(m);
        }
        if self.gone {
            return None;
        }
        self.socket.recv().await
    }

    /// Awaits `call`, reading (and queueing) the client's messages meanwhile.
    pub async fn during<T>(&mut self, call: impl Future<Output = T>) -> T {
        tokio::pin!(call);
        loop {
            if self.gone || self.queued.len() >= MAX_QUEUED {
                return call.await;
            }
            tokio::select! {
                out = &mut call => return out,
                msg = self.socket.recv() => match msg {
                    None => self.gone = true,
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(m) => {
                        if m.is_err() {
                            self.gone = true;
                        }
                        self.queued.push_back(m);
                    }
                },
            }
        }
    }
}
