package cli

// commandHelp is the long help of each command, shown by `warden help COMMAND`.
var commandHelp = map[string]string{
	"gateway": `Two forms:

  warden gateway --stdio [--deny-tool T] [--allow-tool T] [--deny-method M] [--allow-method M]
                        [--env K=V] [--pass-env NAME] [--name NAME] -- CMD [ARGS...]
      Wraps one stdio MCP server. The MCP client talks to warden on stdin and
      stdout; warden starts CMD as a child process with only an allowlisted
      environment (PATH, HOME, USER, LANG, LC_ALL, TZ, TMPDIR, then --env and
      the variables --pass-env names) and
      relays every message through the pipeline. To protect a server in a
      desktop client, replace its command with "warden gateway --stdio --".
      Logs go to stderr; stdout carries only the protocol. With --config FILE
      (its gateway.zero_trust) and --require-token T, calls to T need a token
      in params._meta["io.agentwarden/token"]. CMD is the one upstream: the
      file needs none, and one whose upstreams require tokens is refused
      (replacing them would drop the requirement).

  warden gateway --config FILE [--listen ADDR]
      Serves the upstreams of FILE on a streamable HTTP listener: the default
      upstream at <path> (default /mcp) and each upstream at <path>/<name>.
      The listener binds to loopback unless the configuration says otherwise,
      and checks Host and Origin against DNS rebinding. With zero-trust it
      also serves the authorization API (POST /warden/v1/authorize) and the
      public signing keys (/.well-known/jwks.json); with session_credential
      on an upstream, POST /warden/v1/introspect. /healthz answers while the
      process runs; /readyz answers 503, naming each one, when a store does
      not (the replay store, and the revocation and pin stores in Redis) or
      when the audit log's file was lost (calls are then refused).

      gateway.limits bounds the listener: sessions overall and per
      principal, children per stdio upstream, header and body read
      timeouts. A limit reached is HTTP 503 with Retry-After and -32036.

      On SIGTERM or SIGINT (both modes) it stops gracefully: it refuses new
      sessions and requests (-32035, rule shutdown), lets calls in flight
      finish for up to gateway.limits.drain_timeout (default 10s; it stops
      as soon as none is left), answers the rest with -32035 rule shutdown,
      flushes the audit log and telemetry, and exits 0, or 7 when some calls
      had to be cut.

  warden gateway --config FILE --check-store
      Checks that the zero-trust replay store answers and consumes, prints
      its epoch (tokens issued before it are refused), checks the pin store
      when it is in Redis, and exits: 0 when they work, 4 when one does not.

      With hold_for_approval, the admin listener (default 127.0.0.1:8788)
      serves the approval API and the approval console at /console: log in
      with a display name and the admin token, then approve or deny held
      calls after seeing their exact arguments and parameters_hash.
      Decisions are recorded as console:<name>. The token is printed once,
      when the gateway creates it. Loopback Host names only; see
      docs/console.md.

Every request passes the stages of the pipeline in order: wire (strict
JSON-RPC decoding: duplicate keys, invalid UTF-8, lone surrogates, depth and
size limits, and the wire contract: names a case-insensitive server would
read differently, such as "NAME" beside "name", a lone "Name" or
"argumentſ", methods such as "Tools/Call", and requests sent as
notifications are refused), method-policy, tool-policy (which also refuses
look-alikes of listed tools: "Transfer_Funds", a trailing NUL, a Cyrillic
"а"), then those the configuration turns on: pin (gateway.pinning),
security (gateway.security), classify (gateway.zero_trust.classification),
taint (gateway.taint), consent, zero-trust and revocation (an upstream's
require_token), and last tools, which keeps each tools/list answer in the
tool index. Every message is recorded in the audit log before it leaves (when
gateway.audit is on).
warden's own token (params._meta "io.agentwarden/...") is removed from
every message before it goes upstream. A refusal is a JSON-RPC error whose data names
the stage and the rule, for example
  {"code":-32001,"message":"tool \"get_env\" is not allowed on upstream \"demo\"",
   "data":{"stage":"tool-policy","rule":"deny \"get_env\""}}
Error codes are listed in docs/errors.md.
`,
	"config": `  warden config check FILE
      Decodes FILE strictly (unknown fields, duplicate keys, anchors and tags
      are errors) and validates it, printing every problem with its path and
      position. Exit code 0 when valid, 3 when not.
`,
	"token": `  warden token hash --params JSON [--canonical]
      Prints the parameters_hash that binds an approval to a tool call's exact
      arguments: the lowercase hex SHA-256 of their RFC 8785 (JCS) canonical
      form, absent arguments counting as {}. Key order, whitespace and number
      spelling do not change it; any changed value does. Refused, with exit
      code 2: duplicate keys, invalid UTF-8, lone surrogates, and numbers
      beyond ±2^53 (send those as strings).

  warden token issue --sub USER --upstream NAME --tool TOOL --params JSON
                     [--ttl 30s] [--dpop-jkt JKT] [--aud A] [--iss I] [--persona P]
                     [--classification 1..5] [--binding-mode M] [--schema JSON]
                     [--data-dir DIR]
      Prints a compact JWS (typ "wzt+jwt") signed with the active key of
      'warden keys', authorizing USER to call TOOL on the gateway upstream
      NAME (gateway.upstreams[].name) once with exactly these arguments.
      Claims: iss, aud, sub, iat, nbf, exp, jti, upstream, tool,
      parameters_hash, hash_alg, binding_mode, schema_hash, persona,
      classification, cnf.jkt, txn. It is bound to no client session (tokens
      warden issues inside a session carry session_hash and are valid on
      that session only). The lifetime is at most 30s. With
      --schema (the tool's inputSchema as its server declares it) the token
      is hybrid (binding mode C): it also binds the schema's hash, and a
      gateway refuses it once the tool's definition changes.

  warden token verify --token T|- --sub USER --upstream NAME --tool TOOL --params JSON
                      [--session ID] [--aud A] [--iss I] [--persona P] [--skew 5s]
                      [--schema JSON] [--data-dir DIR]
      Checks the token against exactly that call: signature (EdDSA or ES256
      only), iss and aud, INV-1 sub, upstream, tool and session, persona,
      INV-2 nbf/exp/iat, INV-3 parameters_hash. Exit code 0 when valid, 1
      with the failed invariant,
      for example
        INV-3 parameter integrity: parameters_hash does not match the arguments (step 5)
      It does not consume the jti (INV-4) or check DPoP (INV-5).

  warden token inspect TOKEN|-
      Prints the header and claims, decoded but UNVERIFIED.

  warden token sign --key FILE --token TOKEN|-
      Prints the client's Tier 3 signature of the invocation TOKEN grants (its
      jti, tool and parameters_hash), made with the private key from
      warden keys client. The client sends it in
      params._meta["io.agentwarden/signature"] with the token.

  warden token revoke --jti ID | --sub SUBJECT [--before TIME] | --session ID | --list
                      [--reason TEXT] [--as NAME] [--for DURATION] [--admin URL] [--data-dir DIR]
      Revokes one token (its jti), every token of a subject issued before now
      (or --before, RFC 3339), or a session's credentials, through the
      gateway's admin API (AASM P8). The zero-trust stage refuses a revoked
      token before consuming it; with store: redis every instance refuses it.
      --list shows the revocations in force. A revocation is kept 24h (--for),
      which must outlive the tokens it covers.
`,
	"keys": `  warden keys generate [--alg EdDSA|ES256] [--data-dir DIR]
      Creates a signing key and makes it the active one; the previous key is
      retired and still verifies for an hour. Prints the new kid (the key's
      RFC 7638 thumbprint).

  warden keys list [--data-dir DIR]
      Lists the keys that still verify, the active one marked.

  warden keys jwks [--data-dir DIR]
      Prints the public keys as a JWK Set.

  warden keys client --out FILE [--alg EdDSA|ES256]
      Creates a CLIENT key pair for Tier 3 signatures: the private JWK in FILE
      (mode 0600) and the public one in FILE.pub, to pin for a subject in
      gateway.zero_trust.client_keys.

  warden keys api-key --name NAME
      Makes a local API key for the listener's clients (gateway.auth): prints
      the key once, for the client, and the line for gateway.auth.api_keys,
      which holds only its SHA-256. Clients send it as Bearer <key>.

  warden keys audit --out FILE
      Creates the Ed25519 key that signs the audit log's checkpoints, apart
      from the token keys: the private JWK in FILE (mode 0600; never
      overwritten) for gateway.audit.signing_key, and the public one in
      FILE.pub for warden audit verify --key. Prints its kid.

Keys live in DIR/keys (private key files mode 0600; a key readable by group
or others is refused). DIR defaults to $WARDEN_DATA_DIR, else
$XDG_DATA_HOME/warden, else ~/.local/share/warden (macOS: ~/Library/Application
Support/warden).
`,
	"approve": `  warden approve list [--admin URL] [--data-dir DIR]
  warden approve show ID
  warden approve allow ID [--as NAME] [--reason TEXT]
  warden approve deny ID [--as NAME] [--reason TEXT]
      With gateway.zero_trust.hold_for_approval, a call to a tool that needs
      a token but carries none is held until a person decides. These commands
      talk to the gateway's admin listener (gateway.admin.addr, default
      127.0.0.1:8788) with the admin token the gateway created in its data
      dir (mode 0600). list and show print the exact canonical arguments and
      their parameters_hash; allow makes warden issue a token bound to
      exactly those, once. The approver (default cli:<user name>) is
      recorded. A call nobody decides on is denied when approval_timeout
      (default 5m) passes. With approval_channels: [admin, elicitation] the
      client's user is also asked, through MCP elicitation; the first
      decision wins.
`,
	"audit": `  warden audit verify FILE [--backend jsonl|sqlite] [--head SEQ:HASH] [--key PUB]... [--witness FILE]
      Without --backend the kind is read from the file (an SQLite
      database, else JSON Lines, the default backend).
      Reads every record of the audit log (gateway.audit) and reports the
      first one that breaks the chain: an edited field or hash, a deleted,
      inserted or moved record, or a log that ends before its stored head
      (truncation). Exit code 0 when intact, 1 when broken. --head checks
      against a head you recorded elsewhere, which also catches a rewrite
      of the whole log by someone who could change its stored head.
      --key PUB (the public audit key, from warden keys audit; repeat it for
      keys used before a rotation) checks the signature of every checkpoint
      (gateway.audit.signing_key) and names the records after the last valid
      one as unattested: exit 6 when there are any (a crash before the next
      checkpoint, or records appended by someone without the key), 1 when a
      checkpoint is forged or no record is attested at all (a rewrite).
      --witness FILE (gateway.audit.witness) checks that the log holds every
      checkpoint the witness got: exit 1 when a record it attests was cut
      or changed.

  warden audit export FILE [--format jsonl|ocsf] [--integrity]
      Writes the records, one JSON object per line (jsonl, the format
      warden audit verify reads back), or as OCSF 1.8.0 events: API
      Activity (6003) per record, plus a Detection Finding (2004) per
      refusal. --integrity makes them OCSF 1.9.0-dev events whose API
      Activity carries the record's hash, the previous record's hash and
      its seq (the record_integrity profile).
`,
	"conform": `  warden conform lint FILE|DIR|--model NAME|FILE|DIR|--builtin [-D NAME=N]
      Parses and lints a protocol model (IR v1), explores it and warns about
      transitions that never fire and properties that hold vacuously (every
      condition they read is constant over the reachable states, and no
      transition's writes would break them even unguarded). Prints
      file:line:col diagnostics with a caret and a code (docs/errors.md);
      a file over 1 MiB, binary, or nested too deep is refused at once.
      Exit code 0 when clean, 3 when not.

  warden conform check [--model NAME|FILE|DIR|--all] [-D NAME=N] [--warden] [--out DIR]
                       [--max-states N] [--max-depth N] [--workers N] [--progress[=false]]
                       [--symmetry[=false]] [--store exact|hashcompact|bitstate
                       [--bitstate-bits W] [--bitstate-hashes K]]
      Checks each property of the models in its own run, first without and
      then with Adversary actions, and prints the result, class, triage label
      and shortest counterexample. --model takes a built-in model, a model
      file, or a directory of *.yaml model files (diagnostics with
      positions; exit code 3 on an error). -D NAME=N sets a constant the
      model declares (constants:), e.g. -D AGENTS=3; it works with lint,
      emit and matrix too. A leads-to property (kind: leads-to, P ~> Q
      under weak fairness per transition) fails with a lasso, printed as
      prefix ⟲ cycle. --out writes each counterexample
      as ITF JSON under DIR/traces/ (a lasso with "loop"). --warden checks the models behind the
      gateway. When stderr is a terminal a progress line (states, states/s,
      depth, queue) is shown there; --progress shows it anywhere,
      --progress=false never. --symmetry (on by default) stores one state
      per orbit of the permutations of the domains a model declares
      symmetric, so state counts are then orbits; leads-to properties are
      checked without it. --store says how visited states are kept: exact
      (the default; a hold is a proof), hashcompact (a 64-bit fingerprint
      per state) or bitstate (2^W bits, K set per state, as pan's -w and
      -k); the last two may miss states, so their holds read "partial
      coverage" and exit 6. Exit code 1 when a property is violated, 6 when
      none is but a check stopped at --max-states or --max-depth (it prints
      "incomplete": nothing is known about that property) or covered the
      states only partially.

  warden conform emit --format promela|tla --model NAME|FILE|DIR [--warden] [--out DIR] [--tlc-jar JAR]
      Prints a model as Promela for SPIN (-DCHECK_<PROPERTY> selects the
      invariant) or as a TLA+ module with one TLC configuration per
      invariant (--out writes MODULE.tla and MC_<PROPERTY>.cfg; a directory
      of models needs --out). Names TLA+, Promela or C reserve are printed
      with a w_ prefix (WF_wire -> w_WF_wire, len -> w_len). In TLA+, a
      symmetric domain's elements are TLC model values, and each
      invariant's MC_<PROPERTY>.cfg names SYMMETRY Symmetry (a leads-to
      configuration does not: TLC's symmetry is unsound for liveness). --tlc-jar
      (or TLA2TOOLS_JAR) runs TLC on each invariant and compares it with the
      Go checker; exit code 1 on a disagreement.

  warden conform replay --target TARGET [--profile REV] [--warden] [--format text|json]
                        [--tool NAME] [--sensitive-tool NAME] [--leak-tool NAME]
                        [--credential-env VAR] [--card-keys FILE] [--timeout D] [--otlp URL]
      Replays the counterexamples of the target's protocol model against an
      implementation and says, per property, reproduced, blocked (an
      explicit refusal), inconclusive (no answer in time, or the connection
      ended: silence or a crash is never counted as blocked) or
      unrealisable. TARGET: stdio:PROGRAM ARGS..., http://HOST/mcp,
      a2a+http://..., agui+http://..., or a fake: mock:mcp, mock:mcp-http,
      mock:a2a, mock:agui (-hardened / -broken variants). MCP profiles
      2025-06-18, 2025-11-25, 2026-07-28; A2A 1.0, 0.3. Each MCP probe takes
      its own principle's path: P4 plants a directive in a stdio server's
      environment and reads it back through the tool that reads it; P5 calls
      after initialize and asks whether the user was asked; P1 over stdio
      starts the server without its credential variable (--credential-env;
      MCP's stdio servers take credentials from the environment, so without
      it P1 is unrealisable there). --warden replays the target again
      behind an in-process gateway: for MCP, zero-trust on the sensitive
      tool, injected instructions in results quarantined, audit on, and the
      consent probe through a gateway that holds the tool and asks the user
      (elicitation); for A2A, an API key, the
      card pinned (or its signature checked against --card-keys, a JWKS
      file), delegation chains checked, audit on; for AG-UI, every event
      checked, injected instructions quarantined, audit on. --otlp sends a span per
      probe and per message sent and received (AITF and OpenTelemetry
      names) by OTLP over HTTP. Exit code 1 when a finding reproduces, 6
      when none does but a probe was inconclusive, 3 when the target cannot
      be set up.

  warden conform matrix [--model NAME|FILE|DIR] [-D NAME=N] [--max-states N] [--store S ...]
                        [--format json|markdown|html] [--out DIR]
                        [--against TARGET [--profile REV] [--tool NAME] [--sensitive-tool NAME]
                         [--leak-tool NAME] [--credential-env VAR] [--card-keys FILE]
                         [--timeout D]] [--otlp URL]
      Prints the protocol x principle matrix (5 x 11) and the composition
      table; html is one self-contained page linking every counterexample.
      --against replays TARGET (plain and behind warden) and adds
      the implementation and behind-warden columns; triage then follows the
      decision table (BOTH-, SPEC-, IMPL-, MODEL-, AMBIGUITY-FAIL, PASS).
      --otlp sends that replay's spans, as for conform replay.
      --model builds it from other models (cells they do not cover read
      "not modelled"). --out writes matrix.json, matrix.md, matrix.html and
      the traces. Exit code 0, or 6 when a check stopped at --max-states or
      a replay probe was inconclusive.

Models: mcp, a2a, anp, acp-cap, acp-client, cs1-tool-delegation,
cs2-chained-tools, cs3-consent-bypass, cs4-delegation-capability,
cs5-federated. Model types: bool, enum, int, a domain, set D,
D1 -> D2 -> T, records {f: T, ...} (also as array cells: calls[c].state);
expressions add in, subseteq, union, inter, \, card(),
forall/exists x in D; transitions may take params. See docs/conform.md.
`,
	"manifest": `  warden manifest keygen --out PREFIX
      Makes an Ed25519 signing key: PREFIX.jwk (private, mode 0600; never
      overwritten) and PREFIX.pub.jwk (configure it in gateways).
  warden manifest make --upstream NAME [--out FILE] [--timeout 30s] (--from-url URL | -- CMD [ARGS...])
      Connects to the server as a client (initialize, tools/list with every page)
      and writes the unsigned manifest: the pin of each tool. Review it, then sign.
  warden manifest sign --key PREFIX.jwk [--out FILE] MANIFEST.json
      Signs the manifest (compact JWS, EdDSA, typ warden-manifest+jwt).
  warden manifest verify FILE --key PREFIX.pub.jwk [--key ...]
      Checks the signature and prints the pins; exit 1 if it does not verify.
  warden manifest pins [--store FILE] [--upstream NAME]
      Lists the pins of a gateway's SQLite pin store and the definitions waiting
      for a decision, with a diff of each change.
  warden manifest pins approve|reject --store FILE [--approver NAME] UPSTREAM TOOL HASH
      Decides on a waiting definition. HASH must be the exact new hash listed:
      if the server changed the tool again, the approval fails. The approver
      defaults to $USER. A running gateway picks the decision up at its next
      tools/list. See docs/pinning.md.
`,
	"attack": `  warden attack validate [--library-compat] FILE...
      Parses and validates OATF 0.1 documents (rules V-001..V-049, warnings
      W-001..W-007) and prints every problem as file:line:col with its rule
      and path, the source line and a caret. Exit code 0 when all are valid,
      3 when any is not. --library-compat accepts what the public scenario
      library does beyond OATF 0.1 (Perl regexes become warnings). An
      indicator whose target warden never records in the traffic it
      selects is a warning, unmatchable-target, at the target.

  warden attack normalize [--library-compat] FILE
      Prints the canonical form: multi-actor, defaults written, oatf first,
      x- extensions kept. Exit code 3 if the document is invalid.

  warden attack list [--library DIR]
      Lists the documents under DIR (default .) with id, severity, modes,
      indicator count and name. Exit code 3 if any is invalid.

  warden attack run [--mcp-command CMD|--mcp-url URL] [--agui-url URL]
                    [--a2a-url URL] [--listen ADDR|--stdio] [--header 'N: V']
                    [--grace-period D] [--max-session D] [--verdict FILE]
                    [--trace FILE] [--sarif FILE] [--junit FILE] [--otlp URL]
                    [--library-compat] [--allow-unmatchable]
                    [--tier-exit-codes] [--verbose]
                    [--context --context-url URL --context-model NAME
                     [--context-key-env VAR] [--context-no-stream]
                     [--max-turns N] [--context-max-tokens N]
                     [--context-token-budget N]] DOC | --library DIR
      Runs OATF documents against real peers (modes mcp_server, mcp_client,
      a2a_server, a2a_client, ag_ui_client; A2A 0.3 and 1.0 peers). Server
      actors listen on --listen (default 127.0.0.1:0), mcp_server at
      /mcp/ACTOR and a2a_server at /a2a/ACTOR (card below it), and print
      their URLs before any client starts. --a2a-url is the a2a_client
      target's JSON-RPC endpoint. "DOC -- CMD ARGS" runs an MCP server for
      mcp_client. Prints a summary; --verdict writes the OATF verdict JSON,
      --trace JSONL, --sarif SARIF 2.1.0, --junit JUnit XML (a case per
      document and per indicator). --otlp sends every message of the run as
      a span (AITF and OpenTelemetry names) by OTLP over HTTP. --library runs
      every *.yaml under DIR with a progress line and a table. A document
      with an unmatchable-target indicator is refused (exit 3) unless
      --allow-unmatchable. --context makes warden the agent host in front
      of an OpenAI-compatible chat-completions endpoint (--context-url, its
      key from the environment variable --context-key-env, default
      OPENAI_API_KEY): the model gets the document's mcp_server tools and
      an ask_<actor> tool per a2a_server, and is judged by the same
      indicators; an unreachable model or an exhausted token budget is
      verdict error (exit 4). Exit codes:
      0 not exploited, 1 exploited, 6 partial (correlation all: some
      indicators matched, not all), 2 usage (missing endpoint), 3 invalid
      document or a verdict of error from the indicators, 4 a target never
      really exercised (unreachable, an HTTP error such as 404, an actor
      that failed, --max-session reached, nothing sent by any target): the
      verdict is then error, never not exploited, 5 internal. With
      --tier-exit-codes an exploited verdict exits by its highest matched
      indicator tier: 1 ingested or none, 8 local_action, 9
      boundary_breach. A library exits with the worst code, in the order
      5, 4, 3, 2, 9, 8, 1, 6, 0.
`,
	"demo": `  warden demo [--verbose]
      Starts the demo MCP server, an A2A agent and the gateway in this process,
      on a loopback listener, and runs a scripted MCP client session and A2A
      delegations through it. It prints each upstream's pipeline as the gateway
      runs it, what was relayed, what was refused and why (two refusals as the
      audit log holds them: bob asking for alice's A2A task, and a POST in a
      session warden never issued, its body on record as length and SHA-256
      only), an OATF attack run, then what the gateway recorded (the audit log
      verified; the spans and OCSF events its jsonl exporters wrote, by name
      and class; the security processor's findings; dropped telemetry from
      /metrics), and the model checker's verdicts on MCP, bare and behind
      warden, with the leads-to property of held calls. Nothing to install.
`,
}
