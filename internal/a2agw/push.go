package a2agw

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Push notification webhooks. A push notification config makes the agent
// POST the task's updates to a URL the client chose, from the agent's own
// network: a client that names http://169.254.169.254/… or an internal
// service on 127.0.0.1 makes the agent its proxy (SSRF; the A2A spec's
// security section asks the agent to validate webhook URLs against it).
// warden refuses what it can judge from the URL alone, wherever the agent
// reads one:
//
//	CreateTaskPushNotificationConfig   params.url
//	tasks/pushNotificationConfig/set   params.pushNotificationConfig.url
//	SendMessage, message/send, …       params.configuration.taskPushNotificationConfig.url
//	                                   params.configuration.pushNotificationConfig.url (0.3)
//
// A URL passes when its scheme is http or https and its host is a DNS
// name (not localhost, nor under .localhost) or a global unicast IP
// address. Hosts that some resolver reads as an IP address (127.1,
// 2130706433, 0x7f.0.0.1) are refused with the private ranges. warden does
// not resolve names: a name that resolves to a private address is the
// agent's to refuse when it sends. Options.AllowInternalWebhooks turns the
// check off.

// pushContainers are where a push config object is, and pushNames the
// members naming one inside params.configuration.
var (
	pushContainers = [][]string{{}, {"pushNotificationConfig"}, {"configuration", "taskPushNotificationConfig"},
		{"configuration", "pushNotificationConfig"}}
	pushNames = []string{"configuration", "pushNotificationConfig", "taskPushNotificationConfig", "url"}
)

// checkPushURL refuses a request whose push notification config names a
// webhook the agent must not call for a client, or names one in a spelling
// warden does not read (params.URL, configuration.TaskPushNotificationConfig).
func (h *Handler) checkPushURL(c *call) *deny.Denial {
	if h.opts.AllowInternalWebhooks {
		return nil
	}
	refuse := func(reason string) *deny.Denial {
		return &deny.Denial{Stage: StageMethod, Rule: deny.RulePushURL, Reason: reason}
	}
	direct := c.msg.Method == "CreateTaskPushNotificationConfig"
	for _, where := range pushContainers {
		if len(where) == 0 && !direct {
			continue
		}
		obj, ok := c.msg.Params, true
		if len(where) > 0 {
			obj, ok = jsonrpc.Lookup(c.msg.Params, where...)
		}
		if !ok {
			continue
		}
		path := "params"
		for _, w := range where {
			path += "." + w
		}
		if raw, ok := jsonrpc.Lookup(obj, "url"); ok {
			u, isString := jsonrpc.String(raw)
			if !isString {
				return refuse(path + ".url must be a string")
			}
			if why := webhookProblem(u); why != "" {
				return refuse(path + ".url " + strconv.Quote(u) + ": " + why)
			}
		}
	}
	// Another spelling of a member read above, which the agent's
	// encoding/json would fold into it unseen by this check.
	objects := [][]string{{}, {"configuration"}, {"pushNotificationConfig"},
		{"configuration", "taskPushNotificationConfig"}, {"configuration", "pushNotificationConfig"}}
	if bad, path, want := caseVariant(c.msg.Params, objects, pushNames); bad != "" {
		at := "params" + path + "." + bad
		return refuse(at + " is another spelling of " + want + ", which the agent may read as it")
	}
	return nil
}

// webhookProblem says why the agent must not be made to call u, or "".
func webhookProblem(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "not a URL"
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return "a webhook is an http or https URL"
	}
	host := strings.TrimSuffix(strings.ToLower(p.Hostname()), ".") // "localhost." is localhost
	switch {
	case host == "":
		return "no host"
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return "names this host (localhost): the agent would call itself"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if !ip.IsGlobalUnicast() || ip.IsPrivate() || sharedAddressSpace.Contains(ip) {
			return "a loopback, private, link-local or unspecified address: the agent would call into its own network"
		}
		return ""
	}
	// A last label that starts with a digit and holds only hex digits and
	// 'x' is a number to inet_aton-style resolvers, which read the host as
	// an address (127.1, 2130706433, 0x7f.0.0.1); no top-level domain
	// starts with a digit.
	if last := host[strings.LastIndexByte(host, '.')+1:]; last != "" && last[0] >= '0' && last[0] <= '9' && strings.Trim(last, "0123456789abcdefx") == "" {
		return "a numeric host that resolvers read as an IP address"
	}
	return ""
}

// sharedAddressSpace is 100.64.0.0/10 (RFC 6598, carrier-grade NAT),
// which netip does not count as private.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")
