//! The scripted OAuth servers of the testkit (`brain_mcp_testkit::oauth`), and a test
//! authorizer that follows the authorization server's redirect over HTTP, without a browser.

use std::sync::Mutex;

pub(crate) use brain_mcp_testkit::oauth::*;
use brain_mcp_transport::{AuthorizationPrompt, Authorizer, HostAuthError};

/// An authorizer that does what a user's browser would: GET the authorization URL and
/// return where the authorization server redirects (it redirects at once).
#[derive(Debug, Default)]
pub(crate) struct FollowRedirect {
    pub(crate) prompts: Mutex<Vec<AuthorizationPrompt>>,
}

#[async_trait::async_trait]
impl Authorizer for FollowRedirect {
    fn redirect_uri(&self) -> Option<String> {
        Some("http://127.0.0.1:3000/callback".to_owned())
    }

    async fn authorize(&self, prompt: &AuthorizationPrompt) -> Result<String, HostAuthError> {
        lock(&self.prompts).push(prompt.clone());
        get(&prompt.authorization_url)
            .await?
            .location
            .ok_or_else(|| "no redirect".into())
    }
}
