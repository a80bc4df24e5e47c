package assemble

// Scale-out wiring: where the approval queue and the revocation registry
// live, chosen by zero_trust.store like the replay store, so that several
// gateways on one Redis share all three (docs/scale-out.md).
//
//	store    replay store        approval queue          revocations
//	memory   this process        this process            this process
//	sqlite   state.db            this process (*)        revoked.db, next to state.db
//	redis    redis_url           redis_url (shared)      redis_url (shared)
//
// (*) a held call needs its gateway alive to release it, and SQLite has no
// notification to wake it: only Redis shares the queue.
//
// Tool pins (gateway.pinning) follow: with store redis they live on
// redis_url too, unless pinning.store or pinning.store_path says otherwise
// (config.GatewayConfig.PinStore, opened by pinner).

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/pin"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// openRevocations opens the revocation registry of z; dir is the data
// directory.
func openRevocations(z config.ZeroTrustConfig, dir string) (revoke.Registry, error) {
	switch z.Store {
	case config.StoreMemory:
		return revoke.NewMemory(), nil
	case config.StoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return revoke.OpenRedis(ctx, z.RedisURL)
	default:
		base := dir
		if z.StorePath != "" {
			base = filepath.Dir(z.StorePath)
		}
		if err := os.MkdirAll(base, 0o700); err != nil {
			return nil, err
		}
		return revoke.OpenSQLite(filepath.Join(base, "revoked.db"))
	}
}

// openApprovals returns the approval queue of z: shared in Redis with store
// redis, in memory otherwise, with its decision history in
// dir/approval-history.jsonl so that it survives a restart. approvers is
// the two-person rule (gateway.admin.approvers). Its admin API also serves
// the revocation API of reg.
func openApprovals(z config.ZeroTrustConfig, dir string, approvers map[int]int, reg revoke.Registry, logger *slog.Logger) (*approval.Queue, error) {
	o := approval.Options{Timeout: z.ApprovalTimeout, Logger: logger, Approvers: approvers}
	if reg != nil {
		o.Revocations = func(token string) http.Handler { return revoke.Handler(reg, token) }
	}
	if z.Store == config.StoreRedis {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b, err := approval.OpenRedis(ctx, z.RedisURL)
		if err != nil {
			return nil, err
		}
		o.Backend = b
	} else {
		b, err := approval.OpenMemoryBackend(filepath.Join(dir, approvalHistoryFile))
		if err != nil {
			return nil, err
		}
		o.Backend = b
	}
	return approval.NewQueue(o), nil
}

// approvalHistoryFile keeps the approval queue's decisions across restarts
// when they are not in Redis (docs/console.md).
const approvalHistoryFile = "approval-history.jsonl"

// openStore opens the replay store of z; dir is the data directory.
func openStore(z config.ZeroTrustConfig, dir string) (store.Store, error) {
	switch z.Store {
	case config.StoreMemory:
		return store.NewMemory(), nil
	case config.StoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return store.OpenRedis(ctx, z.RedisURL)
	default:
		path := z.StorePath
		if path == "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			path = filepath.Join(dir, "state.db")
		}
		return store.OpenSQLite(path)
	}
}

// StoreReport is what CheckStore found.
type StoreReport struct {
	Kind  string    // sqlite, memory or redis
	Where string    // the file or the URL without credentials
	Epoch time.Time // the store's epoch (tokens issued before it are refused)
}

// CheckStore opens the replay store that z configures, proves it can
// consume (an id of its own, in a namespace no credential uses, expiring at
// once) and reports its epoch: warden gateway --check-store.
func CheckStore(ctx context.Context, z config.ZeroTrustConfig) (StoreReport, error) {
	dir := z.DataDir
	if dir == "" {
		dir = zerotrust.DefaultDataDir()
	}
	rep := StoreReport{Kind: z.Store}
	switch z.Store {
	case config.StoreRedis:
		if u, err := url.Parse(z.RedisURL); err == nil {
			u.User = nil
			rep.Where = u.String()
		}
	case config.StoreSQLite:
		rep.Where = z.StorePath
		if rep.Where == "" {
			rep.Where = filepath.Join(dir, "state.db")
		}
	}
	st, err := openStore(z, dir)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	if p, ok := st.(store.Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			return rep, err
		}
	}
	if es, ok := st.(store.EpochStore); ok {
		ok, epoch, err := es.ConsumeSince(ctx, "check", rand.Text(), time.Now().Add(time.Second))
		if err != nil {
			return rep, err
		}
		if !ok {
			return rep, errors.New("a fresh id was reported as used: the store is not consuming correctly")
		}
		rep.Epoch = epoch
	}
	return rep, nil
}

// CheckPinStore opens the pin store of gc and proves it answers, when the
// pins live in Redis: warden gateway --check-store. It reports Kind "" and
// checks nothing when pinning is off or the pins are in SQLite or memory
// (a file opened at start, or nothing to reach).
func CheckPinStore(ctx context.Context, gc config.GatewayConfig) (StoreReport, error) {
	if !gc.Pinning.Enabled || gc.PinStore() != config.StoreRedis {
		return StoreReport{}, nil
	}
	rep := StoreReport{Kind: config.StoreRedis}
	if u, err := url.Parse(gc.ZeroTrust.RedisURL); err == nil {
		u.User = nil
		rep.Where = u.String()
	}
	st, err := pin.OpenRedis(ctx, gc.ZeroTrust.RedisURL) // pings and subscribes
	if err != nil {
		return rep, err
	}
	defer st.Close()
	return rep, st.Ping(ctx)
}

// pinner opens the pin store and the signed manifests of gc.Pinning,
// providing the store to l. A manifest that does not verify stops the
// gateway from starting. With the zero-trust state in Redis the pins are
// there too (gc.PinStore), so that a tool pinned, held or approved through
// one gateway is so on all of them.
func pinner(gc config.GatewayConfig, logger *slog.Logger, l *lifecycle) (*pin.Pinner, io.Closer, error) {
	pc := gc.Pinning
	var st pin.Store
	switch gc.PinStore() {
	case config.StoreMemory:
		st = pin.NewMemory()
	case config.StoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := pin.OpenRedis(ctx, gc.ZeroTrust.RedisURL)
		if err != nil {
			return nil, nil, err
		}
		st = s
	default:
		path, err := pinStorePath(gc)
		if err != nil {
			return nil, nil, err
		}
		s, err := pin.OpenSQLite(path)
		if err != nil {
			return nil, nil, err
		}
		st = s
	}
	l.provide(st)
	var manifests []*pin.Manifest
	for i, mc := range pc.Manifests {
		var keys []ed25519.PublicKey
		for _, kp := range mc.Keys {
			k, err := pin.LoadPublicKey(kp)
			if err != nil {
				return nil, nil, fmt.Errorf("manifests[%d].keys: %w", i, err)
			}
			keys = append(keys, k)
		}
		m, err := pin.LoadManifest(mc.File, keys)
		if err != nil {
			return nil, nil, fmt.Errorf("manifests[%d]: %w", i, err)
		}
		manifests = append(manifests, m)
	}
	firstUse := pin.FirstUsePin
	if pc.FirstUse == string(pin.FirstUseHold) {
		firstUse = pin.FirstUseHold
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := pin.New(ctx, pin.Options{Store: st, FirstUse: firstUse, Manifests: manifests, Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	return p, st, nil
}

// pinStorePath is the SQLite file of the pins (tool and agent card pins
// share it): gateway.pinning.store_path, or pins.db in the data directory,
// which it creates.
func pinStorePath(gc config.GatewayConfig) (string, error) {
	if gc.Pinning.StorePath != "" {
		return gc.Pinning.StorePath, nil
	}
	dir := gc.ZeroTrust.DataDir
	if dir == "" {
		dir = zerotrust.DefaultDataDir()
	}
	if dir == "" {
		return "", errors.New("no store_path and no data directory: set store_path, zero_trust.data_dir or WARDEN_DATA_DIR")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(dir, "pins.db"), nil
}

// a2aPins opens the agent card pin store of gc (see a2aHandlers).
func a2aPins(gc config.GatewayConfig) (a2agw.PinStore, io.Closer, error) {
	if !gc.Pinning.Enabled {
		return &a2agw.MemoryPins{}, nil, nil
	}
	switch gc.PinStore() {
	case config.StoreMemory:
		return &a2agw.MemoryPins{}, nil, nil
	case config.StoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, err := a2agw.OpenRedisPins(ctx, gc.ZeroTrust.RedisURL)
		if err != nil {
			return nil, nil, err
		}
		return p, p, nil
	}
	path, err := pinStorePath(gc)
	if err != nil {
		return nil, nil, err
	}
	p, err := a2agw.OpenSQLitePins(path)
	if err != nil {
		return nil, nil, err
	}
	return p, p, nil
}
