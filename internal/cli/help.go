package cli

// commandHelp is the long help of each command, shown by `warden help COMMAND`.
var commandHelp = map[string]string{
	"gateway": `Two forms:

  warden gateway --stdio [--deny-tool T] [--allow-tool T] [--deny-method M] -- CMD [ARGS...]
      Wraps one stdio MCP server. The MCP client talks to warden on stdin and
      stdout; warden starts CMD as a child process with only an allowlisted
      environment (PATH, HOME, USER, LANG, LC_ALL, TZ, TMPDIR and --env) and
      relays every message through the pipeline. To protect a server in a
      desktop client, replace its command with "warden gateway --stdio --".
      Logs go to stderr; stdout carries only the protocol.

  warden gateway --config FILE [--listen ADDR]
      Serves the upstreams of FILE on a streamable HTTP listener: the default
      upstream at <path> (default /mcp) and each upstream at <path>/<name>.
      The listener binds to loopback unless the configuration says otherwise,
      and checks Host and Origin against DNS rebinding.

Every request passes the stages of the pipeline in order: wire (strict
JSON-RPC decoding: duplicate keys, invalid UTF-8, lone surrogates, depth and
size limits), method-policy and tool-policy. A refusal is a JSON-RPC error
whose data names the stage and the rule, for example
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
`,
	"demo": `  warden demo [--verbose]
      Starts the demo MCP server and the gateway in this process, on a loopback
      listener, and runs a scripted MCP client session through it. It prints
      what was relayed, what was refused and why. Nothing to install.
`,
}
