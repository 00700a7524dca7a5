//! The composed application's state: the core, and what only the edge and the console need.

use std::sync::Arc;

use crate::console::ConsoleSettings;
use crate::http::client_addr::TrustedProxies;
use crate::http::error::ErrorLinks;
use crate::service::Core;

/// What the composed application holds. Each door gets its part ([`super::router`]).
#[derive(Clone)]
pub struct AppState {
    pub core: Core,
    pub links: Arc<ErrorLinks>,
    /// The developer console's settings (`/console`).
    pub console: Arc<ConsoleSettings>,
    /// Whose forwarding headers give the client address (`trusted_proxies`).
    pub trusted_proxies: Arc<TrustedProxies>,
}

impl std::ops::Deref for AppState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}
