package gateway

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
// (config.GatewayConfig.PinStore, opened by pinner in config.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/revoke"
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

// sessionRevocationRetention is how long a closed session's revocation is
// kept: longer than any token bound to it lives (30 s by default).
const sessionRevocationRetention = time.Hour

// endSession is AASM P8 for a session that closed (DELETE, stdio exit, idle
// timeout): its pending approvals are cancelled, on every instance, and its
// credentials revoked. Either may be nil. It runs every step and reports
// every failure.
func endSession(ctx context.Context, q *approval.Queue, reg revoke.Registry, session string) error {
	if session == "" {
		return nil
	}
	var errs []error
	if q != nil {
		if _, err := q.CancelSession(ctx, session); err != nil {
			errs = append(errs, err)
		}
	}
	if reg != nil {
		err := reg.Revoke(ctx, revoke.Revocation{Kind: revoke.KindSession, ID: session, By: "gateway",
			Reason: "the session ended", Until: time.Now().Add(sessionRevocationRetention)})
		if err != nil {
			errs = append(errs, fmt.Errorf("revoking the session's credentials: %w", err))
		}
	}
	return errors.Join(errs...)
}

// closeAll closes every closer that is not nil, in order, and reports every
// failure.
type closeAll []io.Closer

func (cs closeAll) Close() error {
	var errs []error
	for _, c := range cs {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
