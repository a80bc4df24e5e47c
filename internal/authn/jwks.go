package authn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// StaticKeys is a KeySource that never changes (a JWKS file).
type StaticKeys struct{ Set jose.JSONWebKeySet }

// Keys implements KeySource.
func (s StaticKeys) Keys() (jose.JSONWebKeySet, error) { return s.Set, nil }

// Refresh implements KeySource.
func (s StaticKeys) Refresh() (jose.JSONWebKeySet, error) { return s.Set, nil }

// LoadJWKS reads a JWKS file.
func LoadJWKS(path string) (StaticKeys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return StaticKeys{}, err
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return StaticKeys{}, fmt.Errorf("%s: not a JWKS: %v", path, err)
	}
	return StaticKeys{Set: set}, nil
}

// RemoteKeys is a KeySource that fetches a JWKS over HTTP and caches it.
// An unknown kid refetches, at most once per MinRefresh, so a client
// cannot make warden hammer the issuer.
type RemoteKeys struct {
	// Immutable after NewRemoteKeys.
	url        string
	client     *http.Client
	ttl        time.Duration
	minRefresh time.Duration

	mu      sync.Mutex
	set     jose.JSONWebKeySet // guarded by mu
	fetched time.Time          // guarded by mu; zero before the first fetch
}

// NewRemoteKeys returns a key source for the JWKS at url, cached for ttl
// (0: 10 minutes).
func NewRemoteKeys(url string, ttl time.Duration) *RemoteKeys {
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	return &RemoteKeys{url: url, ttl: ttl, minRefresh: 30 * time.Second,
		client: &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a key set is fetched from exactly where it was configured
		}}}
}

// Keys implements KeySource.
func (r *RemoteKeys) Keys() (jose.JSONWebKeySet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.fetched.IsZero() && time.Since(r.fetched) < r.ttl {
		return r.set, nil
	}
	return r.fetchLocked()
}

// Refresh implements KeySource.
func (r *RemoteKeys) Refresh() (jose.JSONWebKeySet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.fetched.IsZero() && time.Since(r.fetched) < r.minRefresh {
		return r.set, nil
	}
	return r.fetchLocked()
}

func (r *RemoteKeys) fetchLocked() (jose.JSONWebKeySet, error) {
	resp, err := r.client.Get(r.url)
	if err != nil {
		return r.set, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return r.set, fmt.Errorf("JWKS %s: HTTP %d", r.url, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return r.set, err
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return r.set, fmt.Errorf("JWKS %s: %v", r.url, err)
	}
	if len(set.Keys) == 0 {
		return r.set, errors.New("JWKS " + r.url + " has no keys")
	}
	r.set, r.fetched = set, time.Now()
	return set, nil
}
