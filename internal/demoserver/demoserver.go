// Package demoserver is the deliberately unsafe MCP server that warden guards
// in `warden demo` and in tests.
//
// It is a real MCP server, built on the official Go SDK, whose tools are the
// kinds of things a gateway must police:
//
//	read_file, list_dir, write_file   files, confined to Options.Root by os.Root
//	transfer_funds                    moves money on a fake in-memory Ledger
//	get_env                           returns the environment: leaks secrets on purpose
//	echo                              returns its input
//	slow_count                        reports progress while it counts
//	ask_user                          asks the client's user, by elicitation or sampling
//
// plus the resource demo://readme, the resource template file:///{+path}
// (read under Root) and the prompt review_transfer.
//
// Everything is deterministic: no clocks, no randomness, no network. The
// file tools cannot reach outside Root, and the ledger is a toy; the one
// real hazard is get_env, which is why [Main] refuses to listen on anything
// but a loopback address.
//
// Use it in a test:
//
//	server := demoserver.New(demoserver.Options{Root: t.TempDir()})
//	st, ct := mcp.NewInMemoryTransports()
//	ss, _ := server.Connect(ctx, st, nil)
//	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
package demoserver

import (
	"context"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server identity reported in initialize and server/discover.
const (
	ServerName    = "warden-demo"
	ServerVersion = "1.0.0"
)

// Options configures the demo server. The zero value is usable: the file
// tools then refuse every call, and get_env reveals the real process
// environment.
type Options struct {
	// Root is the sandbox directory of read_file, list_dir, write_file and of
	// the file:///{+path} resource template. Paths are resolved inside it with
	// os.Root, so neither "..", absolute paths nor symlinks can leave it.
	// If empty, the file tools return an error instead of touching any file.
	Root string

	// Ledger is the bank behind transfer_funds and review_transfer.
	// If nil, New uses a fresh NewLedger with the demo accounts.
	Ledger *Ledger

	// Env returns the environment that get_env reveals, as "KEY=value"
	// strings. If nil, get_env reveals os.Environ(): every secret the server
	// process holds. Tests should set it.
	Env func() []string

	// Logger receives the server's log records. If nil, nothing is logged.
	Logger *slog.Logger
}

// demo holds the state shared by the handlers of one server.
// All fields are immutable after New; the Ledger guards itself.
type demo struct {
	root   string
	ledger *Ledger
	env    func() []string
	logger *slog.Logger
}

// New returns the demo MCP server, named "warden-demo", version "1.0.0",
// with all its tools, resources and prompts registered and the logging
// capability advertised. The server may be connected to any number of
// sessions; they share the ledger.
func New(opts Options) *mcp.Server {
	d := &demo{
		root:   opts.Root,
		ledger: opts.Ledger,
		env:    opts.Env,
		logger: opts.Logger,
	}
	if d.ledger == nil {
		d.ledger = NewLedger()
	}
	if d.env == nil {
		d.env = os.Environ
	}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}

	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: ServerVersion}, &mcp.ServerOptions{
		Instructions: "warden demo server: a deliberately unsafe MCP server for demonstrating the warden gateway. " +
			"Read demo://readme for what each tool does.",
		Logger: d.logger,
		// Setting Capabilities at all replaces the SDK's historical default of
		// {"logging":{}}, so logging is stated here; tools, resources and
		// prompts are still inferred from what is registered below.
		//lint:ignore SA1019 logging is deprecated from 2026-07-28 but the demo relays log messages on purpose
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}},
	})

	d.addFileTools(s)
	d.addLedgerTools(s)
	d.addMiscTools(s)
	d.addAskUser(s)
	d.addResources(s)
	return s
}

// readme is the text of the demo://readme resource.
const readme = `# warden demo server

A deliberately unsafe MCP server for demonstrating the warden gateway.
Nothing here is real: the ledger is in memory and the files live in a
sandbox directory.

Tools:

- read_file {path}: read a file under the sandbox root.
- list_dir {path}: list a directory under the sandbox root.
- write_file {path, content}: write a file under the sandbox root.
- transfer_funds {account_id, amount, recipient}: move money from a demo
  account (ACC_123, ACC_456); amounts are integers in minor units.
- get_env {}: return the server's environment variables. This leaks secrets
  on purpose, so that a gateway can show it catching them.
- echo {message}: return the message.
- slow_count {count, delay_ms}: count slowly, reporting progress.
- ask_user {question}: ask the client's user, by elicitation or sampling.

Resources: demo://readme (this text) and file:///{+path} (files under the
sandbox root). Prompt: review_transfer {account_id}.
`

// addResources registers demo://readme, the file:///{+path} template and the
// review_transfer prompt.
func (d *demo) addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{
		URI:         "demo://readme",
		Name:        "readme",
		Title:       "About the warden demo server",
		Description: "What this server is and what each of its tools does.",
		MIMEType:    "text/markdown",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/markdown", Text: readme},
		}}, nil
	})

	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "file:///{+path}",
		Name:        "sandbox-file",
		Title:       "Files in the sandbox",
		Description: "A file under the demo server's sandbox root; the path is relative to the root.",
	}, d.readFileResource)

	s.AddPrompt(&mcp.Prompt{
		Name:        "review_transfer",
		Title:       "Review account activity",
		Description: "Asks the model to review an account's transfers before approving another.",
		Arguments: []*mcp.PromptArgument{{
			Name:        "account_id",
			Description: "The account to review, for example ACC_123.",
			Required:    true,
		}},
	}, d.reviewTransferPrompt)
}
