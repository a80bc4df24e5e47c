package assemble

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/transport"
)

// TLSConfig returns the listener's TLS configuration (gateway.listen.tls):
// TLS 1.2 at least, and with a client CA, a client certificate that CA
// issued is required and verified during the handshake (mutual TLS). It
// returns nil when the listener serves plain HTTP.
func TLSConfig(t config.ListenTLS) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("gateway.listen.tls: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("gateway.listen.tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("gateway.listen.tls.client_ca_file: %s holds no PEM certificate", t.ClientCAFile)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// CertPrincipal names the client of a mutual-TLS request: the first URI
// SAN of its verified certificate (a SPIFFE ID, say), else its first DNS
// SAN, else its subject's common name.
func CertPrincipal(r *http.Request) (string, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return "", errors.New("no verified client certificate")
	}
	leaf := r.TLS.VerifiedChains[0][0]
	switch {
	case len(leaf.URIs) > 0:
		return leaf.URIs[0].String(), nil
	case len(leaf.DNSNames) > 0:
		return leaf.DNSNames[0], nil
	case leaf.Subject.CommonName != "":
		return leaf.Subject.CommonName, nil
	}
	return "", errors.New("the client certificate names no one (no URI or DNS SAN, no common name)")
}

// certAuthentication authenticates by the client certificate alone, for a
// listener with a client CA and no gateway.auth.
func certAuthentication(r *http.Request) (string, *transport.AuthRefusal) {
	p, err := CertPrincipal(r)
	if err != nil {
		return "", &transport.AuthRefusal{Status: http.StatusUnauthorized, Rule: "client-certificate", Message: err.Error()}
	}
	return p, nil
}
