//! The five-step call path.

use std::{
    collections::HashSet,
    fmt,
    future::{Future, IntoFuture},
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use brain_mcp_transport::{
    Authorization, CallError, CallReport, CallRequest, ClientBuildError, ClientOptions,
    ClientStats, Endpoint, Era, Features, Grant, Lacking, McpClient, PROGRESS_QUEUE, Progress,
    ProgressReceiver, Secret, progress_channel,
};
use brain_tools_config::{HostConfig, JsonObject, McpAuth, McpEra, McpServer, Target, ToolBinding};
use brain_tools_events::{
    CallHeader, Delivery, ErrorKind, McpResult, ResultContent, ResultEvent, ToolError, ToolEvent,
};
use brain_tools_policy::{Allowed, Denied, Policy, PolicyError};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::{
    advice::advice,
    bindings::grant_of,
    executor::{HttpToolCall, HttpToolExecutor, HttpToolOutput},
    scope::CallScope,
    sink::EventSink,
    telemetry::{Finished, Telemetry},
};

/// A tool as a model sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelTool {
    /// The name the model calls it by.
    pub name: String,
    /// What the model reads about it.
    pub description: String,
    /// The JSON Schema of its arguments, verbatim.
    pub input_schema: JsonObject,
}

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A schema that does not compile (loading a config from JSON already rules that
    /// out).
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The MCP client could not be built (its TLS setup failed).
    #[error(transparent)]
    Client(#[from] ClientBuildError),
    /// Bindings this build cannot serve: each needs a cargo feature it was compiled
    /// without (a stdio binding in an `http`-only build). Every call of theirs would fail;
    /// [`ToolHostBuilder::allow_unsupported`] builds the host all the same.
    #[error("{}", unsupported_message(.0))]
    Unsupported(Vec<Unsupported>),
}

/// A binding this build cannot serve: a server or grant that needs a cargo feature the
/// build lacks ([`Features`](crate::Features) says which it has).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unsupported {
    /// The binding's index in the config's `tools`.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// What it needs, and the feature.
    pub lacking: Lacking,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tools[{}] ({}): {} needs the cargo feature `{}` of brain-tools, which this build lacks",
            self.index, self.name, self.lacking.what, self.lacking.feature
        )
    }
}

fn unsupported_message(unsupported: &[Unsupported]) -> String {
    let lines: Vec<String> = unsupported.iter().map(ToString::to_string).collect();
    format!(
        "this build cannot serve {} binding{} (its features: {}): {}",
        unsupported.len(),
        if unsupported.len() == 1 { "" } else { "s" },
        Features::COMPILED.names().join(", "),
        lines.join("; ")
    )
}

/// The bindings of `config` that `built` cannot serve.
fn unsupported(config: &HostConfig, built: Features) -> Vec<Unsupported> {
    config
        .tools
        .iter()
        .enumerate()
        .filter_map(|(index, binding)| {
            let lacking = match &binding.target {
                Target::Mcp(mcp) => match &mcp.server {
                    McpServer::Stdio(_) => built.lacks(true, None::<&McpAuth>),
                    McpServer::Http { auth, .. } => built.lacks(false, auth.as_ref()),
                    _ => None,
                },
                _ => None,
            }?;
            Some(Unsupported {
                index,
                name: binding.name.clone(),
                lacking,
            })
        })
        .collect()
}

type TokenSource = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Builds a [`ToolHost`].
pub struct ToolHostBuilder {
    config: HostConfig,
    client: Option<McpClient>,
    executor: Option<Arc<dyn HttpToolExecutor>>,
    tokens: TokenSource,
    config_path: Option<String>,
    store_flags: Option<String>,
    record_tenant: bool,
    record_sizes: bool,
    allow_unsupported: bool,
}

impl fmt::Debug for ToolHostBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHostBuilder")
            .field("tools", &self.config.tools.len())
            .field("client", &self.client)
            .field("executor", &self.executor)
            .finish_non_exhaustive()
    }
}

impl ToolHostBuilder {
    /// Shares an existing MCP client (one per process is the intent).
    ///
    /// # Examples
    ///
    /// A [`CredentialStore`](crate::CredentialStore) of the host's own, as if backed by a
    /// database (here a map behind a mutex, standing for two tables: grants and leases),
    /// given to the client, and the client to the host. The store keeps the contract the
    /// client relies on when several processes share it: a write happens only when the
    /// stored grant is the one the writer expects (compare-and-swap), versions are never
    /// reused under a key, and one holder at a time gets a key's lease, which passes on
    /// once its time-to-live is over.
    ///
    /// ```
    /// use std::{collections::HashMap, sync::{Arc, Mutex, MutexGuard}, time::{Duration, Instant}};
    /// use brain_tools::{
    ///     ClientOptions, CredentialStore, Expected, GrantKey, GrantVersion, Lease, LeaseHolder,
    ///     McpClient, Secret, StoreError, StoreErrorKind, StoredGrant, Swap, ToolHost,
    ///     VersionedGrant, async_trait, config::HostConfig,
    /// };
    ///
    /// /// Grants in "a database". A real store does each method in one transaction or one
    /// /// conditional statement (`UPDATE ... WHERE version = $expected`), and turns its
    /// /// driver's error into a `StoreError` with the driver's error as its source:
    /// /// `StoreError::new(StoreErrorKind::Unavailable, "...").with_source(error)`.
    /// #[derive(Debug, Default)]
    /// struct DbStore {
    ///     db: Arc<Mutex<Tables>>,
    /// }
    ///
    /// #[derive(Debug, Default)]
    /// struct Tables {
    ///     grants: HashMap<GrantKey, VersionedGrant>,
    ///     /// Key -> (holder, until).
    ///     leases: HashMap<GrantKey, (u64, Instant)>,
    ///     /// A sequence: a version or holder number is never given out twice.
    ///     sequence: u64,
    /// }
    ///
    /// impl Tables {
    ///     fn next(&mut self) -> u64 {
    ///         self.sequence += 1;
    ///         self.sequence
    ///     }
    /// }
    ///
    /// fn tables(db: &Mutex<Tables>) -> Result<MutexGuard<'_, Tables>, StoreError> {
    ///     db.lock()
    ///         .map_err(|_| StoreError::new(StoreErrorKind::Unavailable, "the grants database failed"))
    /// }
    ///
    /// #[async_trait]
    /// impl CredentialStore for DbStore {
    ///     async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
    ///         Ok(tables(&self.db)?.grants.get(key).cloned())
    ///     }
    ///
    ///     async fn save(
    ///         &self,
    ///         key: &GrantKey,
    ///         grant: &StoredGrant,
    ///         expected: Expected,
    ///     ) -> Result<Swap<GrantVersion>, StoreError> {
    ///         let mut tables = tables(&self.db)?;
    ///         let current = tables.grants.get(key).map(|stored| stored.version);
    ///         let matches = match expected {
    ///             Expected::Absent => current.is_none(),
    ///             Expected::Version(version) => current == Some(version),
    ///             Expected::Any => true,
    ///             _ => return Err(StoreError::new(StoreErrorKind::Failed, "unknown expectation")),
    ///         };
    ///         if !matches {
    ///             return Ok(Swap::Conflict); // another writer got there first: nothing written
    ///         }
    ///         let version = GrantVersion::new(tables.next());
    ///         tables.grants.insert(key.clone(), VersionedGrant::new(grant.clone(), version));
    ///         Ok(Swap::Done(version))
    ///     }
    ///
    ///     async fn remove(
    ///         &self,
    ///         key: &GrantKey,
    ///         version: Option<GrantVersion>,
    ///     ) -> Result<Swap<()>, StoreError> {
    ///         let mut tables = tables(&self.db)?;
    ///         let current = tables.grants.get(key).map(|stored| stored.version);
    ///         if version.is_some() && current.is_some() && current != version {
    ///             return Ok(Swap::Conflict);
    ///         }
    ///         tables.grants.remove(key);
    ///         Ok(Swap::Done(()))
    ///     }
    ///
    ///     async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
    ///         let tables = tables(&self.db)?;
    ///         let mut keys: Vec<GrantKey> = tables.grants.keys()
    ///             .filter(|key| key.tenant == tenant && key.resource == resource)
    ///             .cloned()
    ///             .collect();
    ///         keys.sort();
    ///         Ok(keys)
    ///     }
    ///
    ///     async fn try_lease(&self, key: &GrantKey, ttl: Duration) -> Result<Option<Lease>, StoreError> {
    ///         let mut tables = tables(&self.db)?;
    ///         let now = Instant::now();
    ///         if tables.leases.get(key).is_some_and(|(_, until)| *until > now) {
    ///             return Ok(None); // held, and not expired: try again later
    ///         }
    ///         let holder = tables.next();
    ///         tables.leases.insert(key.clone(), (holder, now + ttl));
    ///         Ok(Some(Lease::new(DbLease { db: self.db.clone(), key: key.clone(), holder })))
    ///     }
    /// }
    ///
    /// #[derive(Debug)]
    /// struct DbLease {
    ///     db: Arc<Mutex<Tables>>,
    ///     key: GrantKey,
    ///     holder: u64,
    /// }
    ///
    /// #[async_trait]
    /// impl LeaseHolder for DbLease {
    ///     async fn release(self: Box<Self>) -> Result<(), StoreError> {
    ///         let mut tables = tables(&self.db)?;
    ///         // Only our own: an expired lease may have passed to another holder.
    ///         if tables.leases.get(&self.key).is_some_and(|(holder, _)| *holder == self.holder) {
    ///             tables.leases.remove(&self.key);
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = Arc::new(DbStore::default());
    ///
    /// // The contract, as two processes refreshing one grant see it.
    /// let key = GrantKey::new("acme", "https://mcp.example.com/mcp", "https://auth.example.com");
    /// let mut grant = StoredGrant::new("brain-host");
    /// grant.refresh_token = Some(Secret::new("rt-1"));
    /// let Swap::Done(first) = store.save(&key, &grant, Expected::Absent).await? else { panic!() };
    /// let lease = store.try_lease(&key, store.lease_ttl()).await?.expect("nobody holds it");
    /// assert!(store.try_lease(&key, store.lease_ttl()).await?.is_none(), "one holder at a time");
    /// grant.refresh_token = Some(Secret::new("rt-2"));
    /// let Swap::Done(second) = store.save(&key, &grant, Expected::Version(first)).await? else {
    ///     panic!()
    /// };
    /// lease.release().await?;
    /// // A writer that read the first version writes nothing, and reads again.
    /// assert_eq!(store.save(&key, &grant, Expected::Version(first)).await?, Swap::Conflict);
    /// assert_eq!(store.load(&key).await?.map(|stored| stored.version), Some(second));
    ///
    /// // The store, to the client; the client, to the host.
    /// let client = McpClient::new(ClientOptions::default().credential_store(store))?;
    /// let loaded = HostConfig::from_json_bytes(br#"{"tools": []}"#)?;
    /// let host = ToolHost::builder(loaded.config).client(client).build()?;
    /// # let _ = host;
    /// # Ok(())
    /// # }
    /// ```
    pub fn client(mut self, client: McpClient) -> Self {
        self.client = Some(client);
        self
    }

    /// The executor for HTTP and SSE tools.
    pub fn http_executor(mut self, executor: Arc<dyn HttpToolExecutor>) -> Self {
        self.executor = Some(executor);
        self
    }

    /// Where tokens come from (default: the process environment, read at call time).
    pub fn token_source(
        mut self,
        tokens: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.tokens = Arc::new(tokens);
        self
    }

    /// The path of the host config file, named in the `mcp-tools login` command that an
    /// `authorization_required` message tells the operator to run (default:
    /// `<host-config.json>`).
    pub fn config_path(mut self, path: impl Into<String>) -> Self {
        self.config_path = Some(path.into());
        self
    }

    /// The flags that name the credential store in the `mcp-tools login` and `logout`
    /// commands a message tells the operator to run, as they are to be typed (quoted for
    /// a shell), for example `--store /var/lib/brain/grants` (default: none, the default
    /// store).
    pub fn store_flags(mut self, flags: impl Into<String>) -> Self {
        self.store_flags = Some(flags.into());
        self
    }

    /// Whether a call's span carries the tenant (`brain.tenant`; default: it does).
    /// Turn it off where tenant names are data the people who read traces must not see.
    /// See [docs/observability.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/observability.md#our-attributes-brain).
    pub fn record_tenant(mut self, record: bool) -> Self {
        self.record_tenant = record;
        self
    }

    /// Whether a call's span carries the sizes of its arguments (as JSON) and of its
    /// response as received, in bytes (`brain.arguments.bytes`, `brain.response.bytes`;
    /// default: it does not). Never their content.
    pub fn record_sizes(mut self, record: bool) -> Self {
        self.record_sizes = record;
        self
    }

    /// Builds the host even when some bindings need cargo features this build lacks
    /// (default: [`build`](Self::build) refuses them). Their calls then fail before
    /// anything is sent (`not_sent`, the message naming the feature), and
    /// [`ToolHost::unsupported`] lists them: leave them out of what the model sees.
    pub fn allow_unsupported(mut self, allow: bool) -> Self {
        self.allow_unsupported = allow;
        self
    }

    /// Compiles the policy and builds the host. With the `otel` feature, the host's
    /// metrics are made on the global meter provider as it is now: set yours first.
    ///
    /// # Errors
    /// [`BuildError::Policy`] when a binding's schema does not compile (a config loaded
    /// from JSON has none such); [`BuildError::Unsupported`] when bindings need cargo
    /// features this build lacks (a stdio server in an `http`-only build; see
    /// [`allow_unsupported`](Self::allow_unsupported)); [`BuildError::Client`] when no
    /// client was given and the default one cannot be built (its TLS setup failed).
    pub fn build(self) -> Result<ToolHost, BuildError> {
        let policy = Policy::new(&self.config)?;
        let unsupported = unsupported(&self.config, Features::COMPILED);
        if !unsupported.is_empty() && !self.allow_unsupported {
            return Err(BuildError::Unsupported(unsupported));
        }
        let telemetry = Telemetry::new(&self.config, self.record_tenant, self.record_sizes);
        let param_headers = self
            .config
            .tools
            .iter()
            .filter(|binding| has_key(&binding.input_schema, "x-mcp-header"))
            .map(|binding| binding.name.clone())
            .collect();
        Ok(ToolHost {
            inner: Arc::new(Inner {
                policy,
                param_headers,
                client: match self.client {
                    Some(client) => client,
                    None => McpClient::new(ClientOptions::default())?,
                },
                executor: self.executor,
                tokens: self.tokens,
                config_path: self
                    .config_path
                    .unwrap_or_else(|| UNNAMED_CONFIG.to_owned()),
                store_flags: self.store_flags.unwrap_or_default(),
                telemetry,
                unsupported,
            }),
        })
    }
}

/// Runs tool calls for model sessions. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct ToolHost {
    inner: Arc<Inner>,
}

struct Inner {
    policy: Policy,
    /// Tools whose input schema has `x-mcp-header` annotations.
    param_headers: HashSet<String>,
    client: McpClient,
    executor: Option<Arc<dyn HttpToolExecutor>>,
    tokens: TokenSource,
    /// Named in the login command of an `authorization_required` message.
    config_path: String,
    /// Added to that command: the flags that name the credential store.
    store_flags: String,
    /// The span of a call, and the call metrics.
    telemetry: Telemetry,
    /// The bindings this build cannot serve (built with `allow_unsupported`).
    unsupported: Vec<Unsupported>,
}

impl fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHost")
            .field("policy", &self.inner.policy)
            .field("client", &self.inner.client)
            .finish_non_exhaustive()
    }
}

impl ToolHost {
    /// A host for a config, with its own MCP client and no HTTP executor.
    ///
    /// # Errors
    /// As [`ToolHostBuilder::build`]: a schema that does not compile, or an MCP client
    /// that cannot be built.
    pub fn new(config: &HostConfig) -> Result<Self, BuildError> {
        Self::builder(config.clone()).build()
    }

    /// A builder, to share a client, add an HTTP executor or a token source.
    pub fn builder(config: HostConfig) -> ToolHostBuilder {
        ToolHostBuilder {
            config,
            client: None,
            executor: None,
            tokens: Arc::new(|name| std::env::var(name).ok()),
            config_path: None,
            store_flags: None,
            record_tenant: true,
            record_sizes: false,
            allow_unsupported: false,
        }
    }

    /// The MCP client the host uses (to share with another host, or for discovery).
    pub fn client(&self) -> &McpClient {
        &self.inner.client
    }

    /// What the host's client holds now: calls in flight, background tasks (closes,
    /// refreshes), stdio processes, warm contexts, servers remembered, resends. For
    /// metrics, and for leak accounting: after [`shutdown`](Self::shutdown), with no call
    /// in flight, `background_tasks` and `child_processes` are 0.
    pub fn stats(&self) -> ClientStats {
        self.inner.client.stats()
    }

    /// The bindings this build cannot serve (each needs a cargo feature it lacks): empty
    /// unless the host was built with
    /// [`allow_unsupported`](ToolHostBuilder::allow_unsupported). Their calls fail
    /// `not_sent`.
    pub fn unsupported(&self) -> &[Unsupported] {
        &self.inner.unsupported
    }

    /// Ends what the host's client runs in the background, before the process exits:
    /// waits at most `grace` for sessions and processes to close, and for every refresh
    /// of a delegated grant in flight to end (each within its lease), since a refresh cut
    /// short can lose the refresh token the authorization server rotated. Returns the
    /// grants whose refreshed tokens could not be saved: tell the operator that their
    /// tenants may have to authorize again. See [`McpClient::shutdown`].
    pub async fn shutdown(&self, grace: Duration) -> crate::Shutdown {
        self.inner.client.shutdown(grace).await
    }

    /// The tools a tenant's model may see, in config order.
    pub fn tools_for(&self, tenant: &str) -> Vec<ModelTool> {
        self.inner
            .policy
            .tools_for(tenant)
            .map(|binding| ModelTool {
                name: binding.name.clone(),
                description: binding.description.clone(),
                input_schema: binding.input_schema.clone(),
            })
            .collect()
    }

    /// One call of `tool` with `arguments` for `scope`: a [`ToolCall`] to set a deadline,
    /// a cancel token and a sink on, then to `.await` (or hand to `tokio::spawn`).
    ///
    /// ```no_run
    /// # async fn example(host: brain_tools::ToolHost) {
    /// use std::{sync::Arc, time::Duration};
    /// use brain_tools::{CallScope, CancellationToken, ToolEvent};
    ///
    /// let cancel = CancellationToken::new();
    /// let (events, mut rx) = tokio::sync::mpsc::unbounded_channel::<ToolEvent>();
    /// let call = host
    ///     .call(CallScope::new("acme", "s1", "c1"), "search", serde_json::json!({"query": "rust"}))
    ///     .timeout(Duration::from_secs(5)) // sooner than the binding's timeout: `timeout`
    ///     .cancel(cancel.clone()) // `cancel.cancel()` ends it with `cancelled`
    ///     .sink(Arc::new(events)); // every tool.progress, then the tool.result
    /// // Owned and `Send + 'static`: it can run on a task of its own.
    /// let result = call.spawn().await.unwrap();
    /// assert!(matches!(rx.recv().await, Some(ToolEvent::Progress(_) | ToolEvent::Result(_))));
    /// # let _ = result;
    /// # }
    /// ```
    pub fn call(&self, scope: CallScope, tool: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            host: self.clone(),
            scope,
            tool: tool.into(),
            arguments,
            cancel: CancellationToken::new(),
            deadline: None,
            sink: Arc::new(|_: ToolEvent| {}),
            mcp_result: false,
        }
    }

    /// Runs one call: `sink` receives every `tool.progress` and then the one
    /// `tool.result`, which is also returned.
    async fn execute(&self, call: ToolCall) -> ResultEvent {
        let ToolCall {
            scope,
            tool,
            arguments,
            cancel,
            deadline,
            sink,
            mcp_result,
            ..
        } = call;
        let telemetry = &self.inner.telemetry;
        let span = telemetry.span(&scope, &tool);
        if telemetry.sizes() {
            span.record("brain.arguments.bytes", json_size(&arguments));
        }
        let report = CallReport::new();
        let sent = AtomicBool::new(false);
        let started = Instant::now();
        let result = self
            .run(
                (&scope, &tool),
                arguments,
                (cancel, deadline),
                (&*sink, mcp_result),
                (&report, &sent),
            )
            .instrument(span.clone())
            .await;
        let finished = Finished {
            sent: sent.load(Ordering::Relaxed),
            result: &result,
            report: &report,
            elapsed: started.elapsed(),
        };
        telemetry.finish(&span, &tool, &finished);
        let outcome = match &result.error {
            Some(error) => error.kind.as_str(),
            None => "ok",
        };
        span.in_scope(|| tracing::info!(outcome, "tool call finished"));
        sink.emit(ToolEvent::Result(result.clone()));
        result
    }

    /// The five steps. `keep`: the MCP result is kept as it came instead of converted
    /// ([`ToolCall::mcp_result`]); `report`: what the transport saw; `sent`: set once the
    /// call goes to the MCP client.
    async fn run(
        &self,
        (scope, tool): (&CallScope, &str),
        arguments: Value,
        (cancel, call_deadline): (CancellationToken, Option<(Instant, Option<Duration>)>),
        (sink, keep): (&dyn EventSink, bool),
        (report, sent): (&CallReport, &AtomicBool),
    ) -> ResultEvent {
        let header = scope.header(tool);
        // Step 1: check. Nothing touches the network before this passes.
        let allowed = match self.inner.policy.check(&scope.tenant_id, tool, &arguments) {
            Ok(allowed) => allowed,
            Err(Denied::InvalidArguments { violations, .. }) => {
                return failure(
                    header,
                    ErrorKind::InvalidArguments,
                    Delivery::NotSent,
                    format!(
                        "{tool} was not called because its arguments are invalid: {violations}"
                    ),
                );
            }
            // A tool the tenant may not use answers exactly as one that does not exist:
            // the names offered are the tenant's own, whatever the name asked for.
            Err(_) => {
                let tools = self.inner.policy.tools_for(&scope.tenant_id);
                let offered = crate::nearest::nearest(tool, tools.map(|b| b.name.as_str()));
                let what = match offered.as_slice() {
                    [] => format!("there is no tool named {tool}"),
                    names => format!(
                        "there is no tool named {tool} (tools with similar names: {})",
                        names.join(", ")
                    ),
                };
                return failure(header, ErrorKind::UnknownTool, Delivery::NotSent, what);
            }
        };
        let binding = allowed.binding().clone();
        let limits = allowed.limits();
        // One deadline for steps 2 to 5, computed once: the binding's timeout, or the
        // call's own deadline when that comes sooner.
        let now = Instant::now();
        let (deadline, took) = match call_deadline.filter(|(at, _)| *at < now + limits.timeout) {
            // A timeout the caller gave is said as given, not as what is left of it.
            Some((at, said)) => (
                at,
                said.unwrap_or_else(|| at.saturating_duration_since(now)),
            ),
            None => (now + limits.timeout, limits.timeout),
        };
        let timeout = Deadline {
            took,
            binding: limits.timeout,
        };
        let (progress_tx, progress_rx) = progress_channel(PROGRESS_QUEUE);
        let outcome = match &binding.target {
            Target::Mcp(mcp) => {
                let (endpoint, token) = match self.endpoint(&mcp.server, tool) {
                    Ok(endpoint) => endpoint,
                    Err(error) => return ResultEvent::failure(header, error),
                };
                // An OAuth binding: the tenant's grant, its secrets read now.
                let grant = match self.grant(&mcp.server, tool) {
                    Ok(grant) => grant,
                    Err(error) => return ResultEvent::failure(header, error),
                };
                let mut secrets: Vec<Secret> = token.into_iter().collect();
                let mut request =
                    CallRequest::new(endpoint, &mcp.mcp_tool, &scope.call_id, timeout.took)
                        .deadline(deadline)
                        .arguments(arguments.as_object().cloned().unwrap_or_default())
                        .meta(scope_meta(scope))
                        .max_output_bytes(
                            usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX),
                        )
                        .cancel(cancel)
                        .progress(progress_tx)
                        .param_headers(self.inner.param_headers.contains(tool))
                        .tasks(mcp.tasks)
                        .report(report.clone());
                if let Some(grant) = grant {
                    secrets.extend(grant_secrets(&grant));
                    request = request.authorization(Authorization::new(&scope.tenant_id, grant));
                }
                if let Some(era) = mcp.era {
                    request = request.era(match era {
                        McpEra::Legacy => Era::Legacy,
                        _ => Era::Modern,
                    });
                }
                sent.store(true, Ordering::Relaxed);
                let call = std::pin::pin!(self.inner.client.call(request));
                let outcome = stream(call, progress_rx, &header, sink).await;
                outcome
                    .map(|outcome| {
                        if keep {
                            Kept::Raw(outcome.result)
                        } else {
                            let form = result_content(&binding);
                            Kept::Converted(McpResult::convert(&outcome.result, form))
                        }
                    })
                    .map_err(|error| {
                        let login = Login {
                            config: &self.inner.config_path,
                            tenant: &scope.tenant_id,
                            store: &self.inner.store_flags,
                        };
                        call_failure((tool, timeout), &binding, &error, &secrets, login)
                    })
            }
            Target::Http(http) => {
                let Some(executor) = self.inner.executor.clone() else {
                    return failure(
                        header,
                        ErrorKind::Executor,
                        Delivery::NotSent,
                        format!(
                            "{tool} is an HTTP tool and this host has no executor for HTTP tools"
                        ),
                    );
                };
                let token = match http.token_env.as_deref().map(|v| self.token(tool, v)) {
                    Some(Ok(token)) => Some(token),
                    Some(Err(error)) => return ResultEvent::failure(header, error),
                    None => None,
                };
                let call = HttpToolCall {
                    header: header.clone(),
                    url: http.url.clone(),
                    token,
                    arguments,
                    inspect_session: http.inspect_session.unwrap_or(false),
                    deadline,
                    max_output_bytes: limits.max_output_bytes,
                    cancel: cancel.child_token(),
                    progress: progress_tx,
                };
                let executing =
                    std::pin::pin!(run_http(executor, call, (&binding, timeout), cancel));
                stream(executing, progress_rx, &header, sink)
                    .await
                    .map(|output: HttpToolOutput| {
                        let mut result = McpResult::from_value(&json!({}));
                        result.content = output.content;
                        result.is_error = output.is_error;
                        result.structured = output.structured;
                        Kept::Converted(result)
                    })
            }
            _ => {
                return failure(
                    header,
                    ErrorKind::Executor,
                    Delivery::NotSent,
                    format!("{tool} is a kind of binding this host does not know"),
                );
            }
        };
        match outcome {
            Ok(Kept::Converted(result)) => finish(header, tool, &allowed, result),
            Ok(Kept::Raw(raw)) => {
                // Only what the checks read: the result is handed on as it came.
                let mut result = McpResult::from_value(&json!({}));
                result.is_error = raw.get("isError").and_then(Value::as_bool) == Some(true);
                result.structured = raw
                    .get("structuredContent")
                    .filter(|value| !value.is_null())
                    .cloned();
                let mut event = finish(header, tool, &allowed, result);
                if event
                    .error
                    .as_ref()
                    .is_none_or(|e| e.kind == ErrorKind::ToolError)
                {
                    event.mcp_result = Some(raw);
                }
                event
            }
            Err(error) => ResultEvent::failure(header, error),
        }
    }

    /// The endpoint of an MCP server, with the token read now (rotation needs no restart).
    fn endpoint(
        &self,
        server: &McpServer,
        tool: &str,
    ) -> Result<(Endpoint, Option<Secret>), ToolError> {
        let bearer = match server {
            McpServer::Http {
                token_env: Some(variable),
                ..
            } => Some(self.token(tool, variable)?),
            _ => None,
        };
        Ok((crate::endpoint_of(server, bearer.clone()), bearer))
    }

    /// The grant of an OAuth binding (`auth`), its secrets read now; `None` without `auth`.
    fn grant(&self, server: &McpServer, tool: &str) -> Result<Option<Grant>, ToolError> {
        let McpServer::Http {
            auth: Some(auth), ..
        } = server
        else {
            return Ok(None);
        };
        let tokens = &self.inner.tokens;
        grant_of(auth, |variable| tokens(variable))
            .map(Some)
            .map_err(|error| {
                tool_error(
                    ErrorKind::MissingToken,
                    Delivery::NotSent,
                    format!("{tool} was not called because {error}"),
                )
            })
    }

    /// A token, read from its variable now; unset or empty is a missing token, and one
    /// that cannot be sent in a header is named as such before anything is sent.
    fn token(&self, tool: &str, variable: &str) -> Result<Secret, ToolError> {
        match (self.inner.tokens)(variable).map(Secret::new) {
            Some(token) if token.is_header_safe() => Ok(token),
            Some(token) if !token.expose().is_empty() => Err(tool_error(
                ErrorKind::MissingToken,
                Delivery::NotSent,
                format!(
                    "{tool} was not called because the value of {variable} is not a valid bearer token (it holds a space, a newline or another control character)"
                ),
            )),
            _ => Err(missing_token(tool, variable)),
        }
    }
}

/// One call, owned and ready to run: made by [`ToolHost::call`], set up with
/// [`timeout`](Self::timeout), [`deadline`](Self::deadline), [`cancel`](Self::cancel) and
/// [`sink`](Self::sink), then awaited. It does nothing until it is awaited.
///
/// Awaiting it starts the call on a task of its own (on the current tokio runtime, in the
/// span current at its first poll), so the future is `Send + 'static`, a few words in
/// size, and can be raced or wrapped in `tokio::time::timeout` like any other. A
/// `ToolCall` is [`IntoFuture`], not a future: to run one in the background, call
/// [`spawn`](Self::spawn) (or hand `call.into_future()` to `tokio::spawn`; `tokio::spawn(call)`
/// fails with "`ToolCall` is not a future").
///
/// **Dropping the future** once it has been polled, before it is ready, does not lose the
/// call: the call is
/// cancelled as if its cancel token fired (the server is told, in the 2025-11-25 era by
/// `notifications/cancelled`), and the task still ends it the documented way, with one
/// `tool.result` of kind `cancelled` (or whatever ended it first) and an honest
/// `delivery` sent to the sink. Only the return value is lost; give the call a sink to
/// keep it.
///
/// # Examples
///
/// A deadline and a cancel, on a tool that takes its time (an HTTP tool whose executor
/// waits until it is cancelled, so that this runs without a server): a call past its
/// deadline ends with `timeout`, a cancelled one with `cancelled`, and either way the
/// sink gets every `tool.progress` and then the one `tool.result`.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use brain_tools::{
///     CallScope, CancellationToken, ErrorKind, HttpToolCall, HttpToolExecutor, HttpToolOutput,
///     Progress, ToolError, ToolEvent, ToolHost, async_trait, config::HostConfig,
/// };
///
/// /// Reports progress, then works until the host cancels it.
/// #[derive(Debug)]
/// struct Slow;
///
/// #[async_trait]
/// impl HttpToolExecutor for Slow {
///     async fn execute(&self, call: HttpToolCall) -> Result<HttpToolOutput, ToolError> {
///         let _ = call.progress.send(Progress::new(1.0, Some(10.0), None));
///         call.cancel.cancelled().await; // fired on a timeout or a cancel
///         Ok(HttpToolOutput::new(Vec::new(), false, None))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let loaded = HostConfig::from_json_bytes(br#"{"tools": [{
///     "name": "report", "url": "https://api.example.com/report",
///     "input_schema": {"type": "object"}, "tenants": ["acme"], "timeout_seconds": 300
/// }]}"#)?;
/// let host = ToolHost::builder(loaded.config).http_executor(Arc::new(Slow)).build()?;
///
/// // A deadline sooner than the binding's 300 s: the call ends with `timeout`.
/// let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let result = host
///     .call(CallScope::new("acme", "s1", "c1"), "report", serde_json::json!({}))
///     .timeout(Duration::from_millis(50))
///     .sink(Arc::new(events))
///     .await;
/// assert_eq!(result.error.as_ref().map(|e| e.kind), Some(ErrorKind::Timeout));
/// assert!(matches!(rx.recv().await, Some(ToolEvent::Progress(_))));
/// assert!(matches!(rx.recv().await, Some(ToolEvent::Result(r)) if r == result));
///
/// // A cancel token (one token may end every call of a model session): the call is
/// // spawned, since it is owned and `Send + 'static`, and cancelled once its progress
/// // shows that it runs.
/// let session = CancellationToken::new();
/// let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let call = host
///     .call(CallScope::new("acme", "s1", "c2"), "report", serde_json::json!({}))
///     .cancel(session.clone())
///     .sink(Arc::new(events));
/// let running = call.spawn();
/// assert!(matches!(rx.recv().await, Some(ToolEvent::Progress(_))));
/// session.cancel();
/// let result = running.await?;
/// assert_eq!(result.error.map(|e| e.kind), Some(ErrorKind::Cancelled));
/// # Ok(())
/// # }
/// ```
#[must_use = "a call does nothing until it is awaited"]
pub struct ToolCall {
    host: ToolHost,
    scope: CallScope,
    tool: String,
    arguments: Value,
    cancel: CancellationToken,
    /// The call's own deadline, and the timeout it was given as (said in the message of a
    /// call that meets it).
    deadline: Option<(Instant, Option<Duration>)>,
    sink: Arc<dyn EventSink>,
    mcp_result: bool,
}

/// A call's result before it becomes a `tool.result`: converted to Brain content blocks,
/// or the MCP result as the server sent it ([`ToolCall::mcp_result`]).
enum Kept {
    Converted(McpResult),
    Raw(Value),
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The arguments are tenant data: not printed.
        f.debug_struct("ToolCall")
            .field("scope", &self.scope)
            .field("tool", &self.tool)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl ToolCall {
    /// Ends the call with `timeout` once `timeout` has passed, if that comes before the
    /// binding's own `timeout_seconds` (which always applies).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        let deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + MAX_TIMEOUT);
        self.deadline = Some((deadline, Some(timeout)));
        self
    }

    /// Ends the call with `timeout` at `deadline`, if that comes before the binding's own
    /// `timeout_seconds` (which always applies). Takes tokio's
    /// [`Instant`](crate::Instant) or the standard library's.
    pub fn deadline(mut self, deadline: impl Into<Instant>) -> Self {
        self.deadline = Some((deadline.into(), None));
        self
    }

    /// Ends the call with `cancelled` when `cancel` fires (one token may cancel many
    /// calls: a model session's, for example). The token is only read, never fired.
    pub fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Where the call's events go: every `tool.progress` while it runs, then its one
    /// `tool.result`. Without one, events are dropped (the result is still returned).
    pub fn sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Keeps the MCP result as the server sent it, in the `tool.result`'s
    /// [`mcp_result`](ResultEvent::mcp_result), instead of converting it to Brain content
    /// blocks (its `content` stays empty; the binding's `result_content` does not apply):
    /// for a host that hands results on to MCP clients of its own, as a gateway does. The
    /// checks still hold: `max_output_bytes` bounds it as received, and a result that
    /// breaks the binding's `output_schema` is an error (`output_schema`) with no result
    /// kept. A tool's own error (`isError`) is kept, with its `tool_error` error object.
    /// Results of HTTP tools are converted as always (their executor makes Brain blocks).
    pub fn mcp_result(mut self) -> Self {
        self.mcp_result = true;
        self
    }

    /// Runs the call on a task of its own, now, and returns its handle, which resolves to
    /// the `tool.result` (`tokio::spawn(call)` does not compile: a `ToolCall` is not a
    /// future but becomes one when awaited; this is `tokio::spawn(call.into_future())`,
    /// in the current span). Dropping the handle lets the call run to its end (its
    /// events still reach the sink); [`abort`](tokio::task::JoinHandle::abort) cancels
    /// it as dropping an awaited call does.
    ///
    /// # Panics
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn spawn(self) -> tokio::task::JoinHandle<ResultEvent> {
        tokio::spawn(self.into_future().instrument(tracing::Span::current()))
    }
}

/// No call waits longer than this, whatever it is given (a year).
const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

impl IntoFuture for ToolCall {
    type Output = ResultEvent;
    type IntoFuture = ToolCallFuture;

    fn into_future(self) -> ToolCallFuture {
        ToolCallFuture {
            pending: Some(Box::new(self)),
            running: None,
        }
    }
}

/// A [`ToolCall`] being awaited: resolves to its `tool.result`. The call starts on a task
/// of its own when the future is first polled, in the span current then (so
/// `.instrument(span)` makes `span` its parent). Dropping it once started cancels the
/// call, whose task still sends its `tool.result` to the sink.
#[must_use = "a call does nothing until it is awaited"]
pub struct ToolCallFuture {
    /// The call, until the first poll starts it.
    pending: Option<Box<ToolCall>>,
    running: Option<Running>,
}

struct Running {
    task: tokio::task::JoinHandle<ResultEvent>,
    /// Cancels the call when the future is dropped before it is ready.
    cancel: Option<tokio_util::sync::DropGuard>,
    /// What a call whose task was lost (its runtime shut down) still answers with.
    lost: Option<(CallHeader, Arc<dyn EventSink>)>,
}

impl Running {
    /// Starts the call on a task, in the current span.
    fn start(mut call: ToolCall) -> Self {
        // A token of the call's own: dropping the future cancels this call, no other.
        let own = call.cancel.child_token();
        call.cancel = own.clone();
        let lost = Some((call.scope.header(&call.tool), call.sink.clone()));
        let host = call.host.clone();
        let task = tokio::spawn(
            async move { host.execute(call).await }.instrument(tracing::Span::current()),
        );
        Self {
            task,
            cancel: Some(own.drop_guard()),
            lost,
        }
    }
}

impl fmt::Debug for ToolCallFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.running {
            None => "not started",
            Some(running) if running.task.is_finished() => "finished",
            Some(_) => "running",
        };
        f.debug_tuple("ToolCallFuture").field(&state).finish()
    }
}

impl Future for ToolCallFuture {
    type Output = ResultEvent;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ResultEvent> {
        if let Some(call) = self.pending.take() {
            self.running = Some(Running::start(*call));
        }
        let running = self.running.as_mut().expect("polled after it was ready");
        let joined = std::task::ready!(Pin::new(&mut running.task).poll(cx));
        // Ready: nothing is left to cancel.
        if let Some(guard) = running.cancel.take() {
            guard.disarm();
        }
        let lost = running.lost.take();
        self.running = None;
        Poll::Ready(match joined {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // The runtime dropped the task: it may have been sent, and it still gets its
            // one result.
            Err(_) => {
                let (header, sink) = lost.expect("taken once");
                let tool = header.tool.clone();
                let result = failure(
                    header,
                    ErrorKind::Cancelled,
                    Delivery::Unknown,
                    format!("{tool} was cancelled because the host's runtime is shutting down"),
                );
                sink.emit(ToolEvent::Result(result.clone()));
                result
            }
        })
    }
}

/// Whether a key appears anywhere in a JSON object.
fn has_key(object: &JsonObject, key: &str) -> bool {
    fn in_value(value: &Value, key: &str) -> bool {
        match value {
            Value::Object(object) => has_key(object, key),
            Value::Array(items) => items.iter().any(|item| in_value(item, key)),
            _ => false,
        }
    }
    object.contains_key(key) || object.values().any(|value| in_value(value, key))
}

/// The size of a JSON value as compact JSON, in bytes, without building the text.
fn json_size(value: &Value) -> i64 {
    struct Count(i64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self
                .0
                .saturating_add(i64::try_from(bytes.len()).unwrap_or(i64::MAX));
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

fn scope_meta(scope: &CallScope) -> JsonObject {
    let mut meta = JsonObject::new();
    meta.insert(
        "brain.dev/scope".to_owned(),
        json!({
            "tenant_id": scope.tenant_id,
            "session_id": scope.session_id,
            "call_id": scope.call_id,
        }),
    );
    meta
}

/// Forwards progress as `tool.progress` events while the call runs, then what is left in
/// the channel: all progress is emitted before the result. The call is polled first, so
/// a flood of progress never holds back its deadline; the channel is bounded and drops
/// the oldest update when the sink falls behind (progress is live-only).
///
/// The call is pinned by the caller and borrowed here: a future taken by value would be
/// held twice in this one's state (as the argument and as the pinned local), doubling the
/// memory of every call in flight.
async fn stream<T>(
    mut call: std::pin::Pin<&mut impl Future<Output = T>>,
    mut progress: ProgressReceiver,
    header: &CallHeader,
    sink: &dyn EventSink,
) -> T {
    let emit = |update: Progress| {
        sink.emit(ToolEvent::progress(
            header.clone(),
            update.progress,
            update.total,
            update.message,
        ));
    };
    let outcome = loop {
        tokio::select! {
            biased;
            outcome = call.as_mut() => break outcome,
            Some(update) = progress.recv() => emit(update),
        }
    };
    while let Some(update) = progress.try_recv() {
        emit(update);
    }
    outcome
}

async fn run_http(
    executor: Arc<dyn HttpToolExecutor>,
    call: HttpToolCall,
    (binding, timeout): (&ToolBinding, Deadline),
    cancel: CancellationToken,
) -> Result<HttpToolOutput, ToolError> {
    let tool = &binding.name;
    let inner_cancel = call.cancel.clone();
    let deadline = call.deadline;
    // The executor's cancel token is a child of the caller's: an executor that stops as
    // soon as it is cancelled is ready at the same poll as the cancel itself, and the
    // call must end as the caller or the clock ended it, not with what the executor
    // returned on its way out. So the deadline and the cancel are looked at first.
    let outcome = tokio::select! {
        biased;
        () = tokio::time::sleep_until(deadline) => Err(tool_error(
            ErrorKind::Timeout,
            Delivery::Unknown,
            timeout.timed_out_after(tool),
        )),
        () = cancel.cancelled() => Err(tool_error(
            ErrorKind::Cancelled,
            Delivery::Unknown,
            format!("{tool} was cancelled"),
        )),
        outcome = executor.execute(call) => outcome,
    };
    inner_cancel.cancel();
    outcome
}

/// A successful transport result: the tool's own error, an output schema mismatch, or
/// the result.
fn finish(header: CallHeader, tool: &str, allowed: &Allowed, result: McpResult) -> ResultEvent {
    if result.is_error {
        return ResultEvent::new(header, true, result.content).with_error(tool_error(
            ErrorKind::ToolError,
            Delivery::Delivered,
            format!("{tool} reported an error"),
        ));
    }
    if let Err(violations) = allowed.check_output(result.structured.as_ref()) {
        return failure(
            header,
            ErrorKind::OutputSchema,
            Delivery::Delivered,
            format!("{tool} returned output that does not match its output_schema: {violations}"),
        );
    }
    ResultEvent::new(header, false, result.content)
}

fn missing_token(tool: &str, variable: &str) -> ToolError {
    tool_error(
        ErrorKind::MissingToken,
        Delivery::NotSent,
        format!(
            "{tool} was not called because {variable}, the environment variable that holds its API key, is not set"
        ),
    )
}

/// A grant's own secrets, scrubbed from messages as a last line of defence.
fn grant_secrets(grant: &Grant) -> Vec<Secret> {
    use brain_mcp_transport::ClientAuthentication;
    match grant {
        Grant::ClientCredentials(grant) => match &grant.authentication {
            ClientAuthentication::Secret { secret, .. } => vec![secret.clone()],
            ClientAuthentication::PrivateKeyJwt { key, .. } => vec![key.clone()],
            _ => Vec::new(),
        },
        Grant::OAuth(grant) => grant.client_secret.iter().cloned().collect(),
        Grant::Enterprise(grant) => grant
            .client_secret
            .iter()
            .chain(&grant.idp_client_secret)
            .cloned()
            .collect(),
        _ => Vec::new(),
    }
}

/// The config named in a login command when the host did not name its own: a
/// placeholder for the operator to fill in.
const UNNAMED_CONFIG: &str = "<host-config.json>";

/// What an `authorization_required` message, or one about a grant the store cannot
/// read, tells the operator to run.
struct Login<'a> {
    config: &'a str,
    tenant: &'a str,
    /// The flags that name the credential store, if any.
    store: &'a str,
}

impl Login<'_> {
    /// `mcp-tools login ...` (or `logout`) for the tenant and the binding `tool`, each
    /// word quoted for a shell (a tenant is any string a config holds).
    fn command(&self, command: &str, tool: &str) -> String {
        let word = brain_tools_config::text::shell_word;
        let config = if self.config == UNNAMED_CONFIG {
            UNNAMED_CONFIG.to_owned()
        } else {
            word(self.config)
        };
        let store = self.store.trim();
        format!(
            "mcp-tools {command} --config {config} --tool {} --tenant {}{}{store}",
            word(tool),
            word(self.tenant),
            if store.is_empty() { "" } else { " " }
        )
    }
}

/// The transport's detail of a call that met its own deadline.
const TIMED_OUT: &str = "timed out";
/// How the transport's detail of a response over the byte budget begins.
const OVER_BUDGET: &str = "the output exceeded";

fn call_failure(
    (tool, timeout): (&str, Deadline),
    binding: &ToolBinding,
    error: &CallError,
    secrets: &[Secret],
    login: Login<'_>,
) -> ToolError {
    // The transport's kind, delivery and retryable are the event's: only the sentence is
    // ours.
    let (kind, delivery, retryable) = (error.kind(), error.delivery(), error.retryable());
    let advice = advice(kind, delivery, retryable);
    let what = match kind {
        // A task that outlived its time to live says so; the call's own deadline is ours.
        ErrorKind::Timeout if error.detail() != TIMED_OUT => {
            format!("{tool} timed out: {}", error.detail())
        }
        ErrorKind::Timeout => timeout.timed_out_after(tool),
        ErrorKind::Cancelled => format!("{tool} was cancelled"),
        // The whole result came, and its shape (not its bytes) was past the bounds. (A
        // task's result over the budget is delivered too: the task ran.)
        ErrorKind::OutputTooLarge
            if error.delivery() == Delivery::Delivered
                && !error.detail().starts_with(OVER_BUDGET) =>
        {
            format!(
                "{tool} returned a result this host does not take: {}",
                error.detail()
            )
        }
        ErrorKind::OutputTooLarge => format!(
            "{tool} returned more than its max_output_bytes ({} bytes)",
            binding.max_output_bytes
        ),
        // What to run comes last, after what it means for calling again.
        ErrorKind::AuthorizationRequired => format!(
            "{tool} was not called because it needs the tenant to authorize: {}; {advice}: run `{}`",
            error.detail(),
            login.command("login", tool)
        ),
        ErrorKind::AuthorizationFailed => format!(
            "{tool} was not called because no access token could be obtained: {}",
            error.detail()
        ),
        ErrorKind::CredentialStore if error.unreadable_grant() => format!(
            "{tool} was not called because the tenant's grant could not be read: {}; {advice}: run `{}` to remove it, or `{}` to make it again",
            error.detail(),
            login.command("logout", tool),
            login.command("login", tool)
        ),
        ErrorKind::CredentialStore => format!(
            "{tool} was not called because the tenant's grant could not be read: {}",
            error.detail()
        ),
        _ => format!("{tool} failed: {}", error.detail()),
    };
    let message = if kind == ErrorKind::AuthorizationRequired || error.unreadable_grant() {
        what
    } else {
        format!("{what}; {advice}")
    };
    // Server text can echo anything back; no secret leaves in a message.
    let message = secrets
        .iter()
        .filter(|secret| !secret.expose().is_empty())
        .fold(message, |message, secret| {
            message.replace(secret.expose(), "<redacted>")
        });
    ToolError::new(kind, delivery, message).with_retryable(retryable)
}

/// The deadline a call ran against: what it had (`took`), and its binding's
/// `timeout_seconds`; a sooner deadline is one its caller gave (`ToolCall::timeout`,
/// `mcp-tools call --timeout`).
#[derive(Debug, Clone, Copy)]
struct Deadline {
    took: Duration,
    binding: Duration,
}

impl Deadline {
    /// What the model and the person read of a call that met it: what to change, if the
    /// tool needs longer.
    fn timed_out_after(self, tool: &str) -> String {
        if self.took < self.binding {
            format!(
                "{tool} timed out after {}, the deadline its caller gave (its binding's \
                 timeout_seconds is {})",
                seconds(self.took),
                seconds(self.binding)
            )
        } else {
            format!(
                "{tool} timed out after {}, its binding's timeout_seconds (raise it if the \
                 tool needs longer)",
                seconds(self.took)
            )
        }
    }
}

/// "30 s" (or "0.25 s": a call's own deadline may be short). Said to the hundredth of a
/// second, and in whole seconds when it is some: a deadline a few microseconds short of
/// 3 s (taken from a clock) reads "3 s", not "3.00 s".
fn seconds(duration: Duration) -> String {
    let hundredths = (duration.as_millis() + 5) / 10;
    if hundredths.is_multiple_of(100) {
        format!("{} s", hundredths / 100)
    } else {
        format!("{:.2} s", hundredths as f64 / 100.0)
    }
}

/// A failure's error object: what happened, then what it means for calling the tool
/// again (whether it may have run, whether another try may succeed), retryable as its
/// kind usually is.
fn tool_error(kind: ErrorKind, delivery: Delivery, what: String) -> ToolError {
    let retryable = kind.retryable_by_default();
    ToolError::new(
        kind,
        delivery,
        format!("{what}; {}", advice(kind, delivery, retryable)),
    )
}

fn failure(header: CallHeader, kind: ErrorKind, delivery: Delivery, what: String) -> ResultEvent {
    ResultEvent::failure(header, tool_error(kind, delivery, what))
}

/// What the model reads of the binding's results: its `result_content`, in the events
/// crate's terms.
fn result_content(binding: &ToolBinding) -> ResultContent {
    match binding.result_content {
        brain_tools_config::ResultContent::Both => ResultContent::Both,
        brain_tools_config::ResultContent::Structured => ResultContent::Structured,
        brain_tools_config::ResultContent::Content => ResultContent::Content,
        _ => ResultContent::Once,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_is_owned_send_and_small() {
        fn spawnable<T: Send + 'static>(_: &T) {}
        let host = ToolHost::new(&HostConfig::default()).unwrap();
        let call = host.call(CallScope::new("t", "s", "c"), "x", Value::Null);
        spawnable(&call);
        let future = call.into_future();
        spawnable(&future);
        assert!(
            std::mem::size_of_val(&future) <= 256,
            "{} bytes",
            std::mem::size_of_val(&future)
        );
        let result = future.await;
        assert_eq!(result.error.unwrap().kind, ErrorKind::UnknownTool);
    }

    /// A stdio binding, an HTTP one, one with an OAuth grant and one whose grant signs
    /// with a private key, checked against an `http`-only build and this one.
    #[test]
    fn bindings_a_build_cannot_serve_are_named_with_their_feature() {
        let loaded = HostConfig::from_json_value_with_env(
            &json!({"tools": [
                {"name": "files", "input_schema": {"type": "object"}, "mcp_tool": "read",
                 "tenants": ["t"], "command": {"program": "files-server"}},
                {"name": "search", "input_schema": {"type": "object"}, "mcp_tool": "search",
                 "tenants": ["t"], "url": "https://h.example/mcp"},
                {"name": "crm", "input_schema": {"type": "object"}, "mcp_tool": "crm",
                 "tenants": ["t"], "url": "https://crm.example/mcp",
                 "auth": {"type": "client_credentials", "client_id": "c", "client_secret_env": "S",
                          "issuer": "https://id.example"}},
                {"name": "ledger", "input_schema": {"type": "object"}, "mcp_tool": "ledger",
                 "tenants": ["t"], "url": "https://ledger.example/mcp",
                 "auth": {"type": "client_credentials", "client_id": "c",
                          "token_endpoint_auth_method": "private_key_jwt", "private_key_env": "K",
                          "issuer": "https://id.example"}}
            ]}),
            |_| true,
        )
        .unwrap();
        let mut http_only = Features::COMPILED;
        (
            http_only.stdio,
            http_only.http,
            http_only.oauth,
            http_only.oauth_jwt,
        ) = (false, true, false, false);
        let found: Vec<String> = unsupported(&loaded.config, http_only)
            .iter()
            .map(ToString::to_string)
            .collect();
        insta::assert_snapshot!(found.join("\n"));
        let mut default = http_only;
        (default.stdio, default.oauth) = (true, true);
        let found = unsupported(&loaded.config, default);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].name.as_str(), found[0].lacking.feature),
            ("ledger", "oauth-jwt")
        );

        // This build: refused exactly when it lacks what they need, or built anyway.
        let lacking = unsupported(&loaded.config, Features::COMPILED);
        match ToolHost::new(&loaded.config) {
            Ok(host) => assert!(lacking.is_empty() && host.unsupported().is_empty()),
            Err(BuildError::Unsupported(refused)) => {
                assert_eq!(refused, lacking);
                let message = BuildError::Unsupported(refused).to_string();
                assert!(message.starts_with("this build cannot serve "), "{message}");
            }
            Err(other) => panic!("{other}"),
        }
        let host = ToolHost::builder(loaded.config.clone())
            .allow_unsupported(true)
            .build()
            .unwrap();
        assert_eq!(host.unsupported(), lacking);
    }

    #[test]
    fn timeouts_read_as_a_person_says_them() {
        assert_eq!(seconds(Duration::from_secs(30)), "30 s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        assert_eq!(seconds(Duration::from_nanos(2_999_999_000)), "3 s");
        let binding = Deadline {
            took: Duration::from_secs(30),
            binding: Duration::from_secs(30),
        };
        assert_eq!(
            binding.timed_out_after("t"),
            "t timed out after 30 s, its binding's timeout_seconds (raise it if the tool needs longer)"
        );
        let own = Deadline {
            took: Duration::from_millis(250),
            binding: Duration::from_secs(30),
        };
        assert_eq!(
            own.timed_out_after("t"),
            "t timed out after 0.25 s, the deadline its caller gave (its binding's timeout_seconds is 30 s)"
        );
    }
}
