package assemble

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/revoke"
)

// TestZeroTrustStageOpensTheRegistryNextToTheStore: with the sqlite store
// the revocation registry is a file beside the replay store's, so that a
// revocation outlives the gateway.
func TestZeroTrustStageOpensTheRegistryNextToTheStore(t *testing.T) {
	dir := t.TempDir()
	z := config.ZeroTrustConfig{Store: config.StoreSQLite, StorePath: filepath.Join(dir, "sub", "state.db"), HoldForApproval: true}
	reg, err := openRevocations(z, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Revoke(context.Background(), revoke.Revocation{Kind: revoke.KindToken, ID: "j", By: "t"}); err != nil {
		t.Fatal(err)
	}
	reg.Close()
	again, err := revoke.OpenSQLite(filepath.Join(dir, "sub", "revoked.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if revoked, _, err := again.Check(t.Context(), revoke.Token{ID: "j"}); err != nil || !revoked {
		t.Fatalf("the revocation is not in revoked.db beside state.db: %v %v", revoked, err)
	}
}
