// Package difftest runs warden against real MCP server SDKs with messages
// built to be read differently by warden and by the server behind it, and
// judges each run by what the servers actually did.
//
// It has no code outside its tests. The corpus (corpus_test.go, written to
// testdata/corpus.jsonl with -update) is a few hundred adversarial messages
// generated from templates: member names in other cases and Unicode folds
// (ſ, the Kelvin sign, İ, fullwidth), duplicates, escapes, NFC and NFD,
// tool-name look-alikes, number spellings, requests sent as notifications,
// batches, deep and oversize messages, and warden's invocation token in
// every carrier; and (corpus_edges_test.go) bytes that are not UTF-8, bodies
// of several JSON values or with line breaks, what JSON5 accepts, envelope
// members of other types, requests that are also responses, method
// neighbours, ids beyond 2^53, _meta of other types, one token twice in a
// batch, and other HTTP around the body (gzip, Content-Type, repeated MCP
// headers). The integration test (tag integration) sends each of them,
// as raw bytes over warden's streamable HTTP listener, to three upstreams
// built on three SDKs, each run as a stdio child of the real warden binary:
//
//	go-sdk   github.com/modelcontextprotocol/go-sdk      testdata/upstream -sdk go-sdk
//	mcp-go   github.com/mark3labs/mcp-go                 testdata/upstream -sdk mcp-go
//	ts-sdk   @modelcontextprotocol/sdk on Node 22         testdata/tsserver/server.cjs
//
// Each upstream appends every stdin line it reads and every tool handler
// it runs to an oracle file. After the run the oracle compares that with
// warden's audit log and with the tokens the test issued: whatever a
// handler ran, warden must have recorded forwarding (same tool, same
// parameters_hash); transfer_funds never runs without a valid token for
// exactly what it did; no upstream ever sees a member of warden's
// io.agentwarden/ namespace in params._meta; every request is answered; and
// each message the specification says warden refuses never reaches an
// upstream, while the legitimate calls run on every SDK.
//
// An entry may state the arguments its token approved (Exec, the parameter
// binding probes of corpus_binding_test.go): the upstream must then read
// exactly those bytes, the approved arguments in RFC 8785 form.
//
// TestSessionConfusion has a second principal try another's
// Mcp-Session-Id, stream, Last-Event-ID and token on a listener with
// gateway.auth. TestA2AWire and TestA2ATaskOfAnotherPrincipal put the
// binary in front of a real a2a-go agent (github.com/a2aproject/a2a-go/v2),
// whose executor and endpoint record what they got, and
// TestA2AListTasksPerClient checks each client's ListTasks against that
// agent's own list. TestAGUISDK puts it between the AG-UI TypeScript SDK's
// HttpAgent and an agent on the SDK's EventEncoder, and a hostile stub;
// TestAGUILimits in front of a recording AG-UI stub. docs/difftest.md
// lists every probe and its verdict.
//
// TestPlain writes the same corpus straight to each SDK's stdin, without
// warden, and reports what ran: the other column of the differential.
// TestTokenReplayRace sends one token in several POSTs at once and holds
// each SDK to running the call once.
//
//	go test -tags integration -count=1 -v ./internal/difftest/
//	DIFFTEST_ONLY='^body/' go test -tags integration -count=1 -v -run 'TestDifferential|TestPlain' ./internal/difftest/
//	go test ./internal/difftest/ -run TestCorpusFile -update   # rewrite testdata/corpus.jsonl
package difftest
