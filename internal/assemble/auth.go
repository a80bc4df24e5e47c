package assemble

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentwarden/warden/internal/authn"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/transport"
)

// authentication builds the listener's Authenticate function and the RFC
// 9728 protected resource metadata from gateway.auth, or nils when it is
// off. With a client CA on the listener and no gateway.auth, the verified
// client certificate names the principal; with both, the bearer token or
// API key does, and the certificate (required by the handshake) only
// authenticates the connection.
func authentication(gc config.GatewayConfig) (func(*http.Request) (string, *transport.AuthRefusal), http.Handler, error) {
	a := gc.Auth
	if !a.Enabled() {
		if gc.Listen.TLS.ClientCAFile != "" {
			return certAuthentication, nil, nil // mutual TLS: the certificate names the client
		}
		return nil, nil, nil
	}
	cfg := authn.Config{Issuer: a.Issuer, Audience: a.Audience, SubjectClaim: a.SubjectClaim, APIKeys: a.APIKeys}
	var metadata http.Handler
	if a.Issuer != "" {
		switch {
		case a.JWKSFile != "":
			keys, err := authn.LoadJWKS(a.JWKSFile)
			if err != nil {
				return nil, nil, err
			}
			cfg.Keys = keys
		default:
			cfg.Keys = authn.NewRemoteKeys(a.JWKSURL, 0)
		}
		cfg.ResourceMetadata = publicBase(gc) + "/.well-known/oauth-protected-resource"
		doc, _ := json.Marshal(map[string]any{
			"resource":                 a.Audience,
			"authorization_servers":    []string{a.Issuer},
			"bearer_methods_supported": []string{"header"},
		})
		metadata = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
		})
	}
	au, err := authn.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return func(r *http.Request) (string, *transport.AuthRefusal) {
		p, f := au.Authenticate(r)
		if f != nil {
			return "", &transport.AuthRefusal{Status: f.Status, Challenge: f.Challenge, Rule: f.Rule, Message: f.Message}
		}
		return p.Subject, nil
	}, metadata, nil
}

// ApproverScope is the scope a JWT must carry for its subject to log in to
// the approval console and decide on held calls.
const ApproverScope = "warden:approve"

// ConsoleJWT returns, when gateway.auth has an issuer, a check for JWTs
// presented at the console's login: valid for this gateway (issuer,
// audience, keys) and carrying ApproverScope. It returns nil without an
// issuer.
func ConsoleJWT(gc config.GatewayConfig) (func(token string) (string, error), error) {
	a := gc.Auth
	if a.Issuer == "" {
		return nil, nil
	}
	cfg := authn.Config{Issuer: a.Issuer, Audience: a.Audience, SubjectClaim: a.SubjectClaim}
	if a.JWKSFile != "" {
		keys, err := authn.LoadJWKS(a.JWKSFile)
		if err != nil {
			return nil, err
		}
		cfg.Keys = keys
	} else {
		cfg.Keys = authn.NewRemoteKeys(a.JWKSURL, 0)
	}
	au, err := authn.New(cfg)
	if err != nil {
		return nil, err
	}
	return func(token string) (string, error) {
		r, _ := http.NewRequest(http.MethodPost, "/console/login", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		p, f := au.Authenticate(r)
		if f != nil {
			return "", f
		}
		if !p.HasScope(ApproverScope) {
			return "", errors.New("the token lacks the scope " + ApproverScope)
		}
		return p.Subject, nil
	}, nil
}
