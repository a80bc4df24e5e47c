//go:build integration

package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/gateway"
)

// testCA is a certificate authority for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a leaf certificate signed by ca: a server certificate for
// 127.0.0.1, or a client certificate naming uri.
func (ca *testCA) issue(t *testing.T, server bool, uri string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		u, _ := url.Parse(uri)
		tmpl.URIs = []*url.URL{u}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, dir, name string, c tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	kder, _ := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// TestMutualTLS (AASM P1, optional mTLS): with a client CA on the listener,
// only a client whose certificate that CA issued gets a session; its
// certificate's URI SAN is the principal the audit log records. No
// certificate, or one from another CA, fails the handshake.
func TestMutualTLS(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	ca, rogue := newTestCA(t, "warden test CA"), newTestCA(t, "rogue CA")
	certFile, keyFile := writePEM(t, dir, "server", ca.issue(t, true, ""))
	caFile := filepath.Join(dir, "clients-ca.pem")
	os.WriteFile(caFile, ca.pem, 0o600)
	const alice = "spiffe://example.org/agent/alice"

	up, _ := demoUpstream(t, false)
	auditPath := filepath.Join(dir, "audit.jsonl")
	cfg, opts := optionsFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  listen: {tls: {cert_file: %q, key_file: %q, client_ca_file: %q}}
  audit: {backend: jsonl, path: %q}
  upstreams: [{name: demo, url: %s}]
`, certFile, keyFile, caFile, auditPath, up))
	tlsConfig, err := assemble.TLSConfig(cfg.Gateway.Listen.TLS)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(g.Handler())
	srv.TLS = tlsConfig
	srv.StartTLS()
	t.Cleanup(func() { srv.Close(); g.Close() })

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	connectWith := func(certs ...tls.Certificate) (*mcp.ClientSession, error) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		return mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: hc}, nil)
	}
	if _, err := connectWith(); err == nil {
		t.Fatal("a client without a certificate opened a session")
	}
	if _, err := connectWith(rogue.issue(t, false, "spiffe://example.org/agent/mallory")); err == nil {
		t.Fatal("a client with another CA's certificate opened a session")
	}
	cs, err := connectWith(ca.issue(t, false, alice))
	if err != nil {
		t.Fatalf("alice's certificate: %v", err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "over mTLS"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	g.Close()
	if got := auditActors(t, auditPath); !slices.Equal(got, []string{alice}) {
		t.Fatalf("the audit log names %q, want alice's certificate identity %s", got, alice)
	}
}
