package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/ocsf"
)

// exportOCSF is `warden audit export --format ocsf`: the OCSF events of
// each record of b, one per line (an API Activity, and a Detection Finding
// for a refusal), OCSF 1.8.0. With integrity, the events are OCSF 1.9.0-dev
// and each record's API Activity carries the record's place in the hash
// chain through the record_integrity profile (ocsf.Chain): its hash, the
// previous record's, its seq. The chain_uid is the hash of the first
// record exported, which names the log.
func exportOCSF(ctx context.Context, b audit.Backend, out io.Writer, integrity bool) error {
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	builder := ocsf.Builder{Profile: ocsf.ProfileStandard, Product: ocsf.Product{Name: "warden", VendorName: "agentwarden", Version: Version()}}
	var chain *ocsf.Chain
	if integrity {
		builder.Version = ocsf.SchemaVersionIntegrity
		chain = &ocsf.Chain{}
	}
	_, err := b.Scan(ctx, func(r audit.Record) error {
		if chain != nil && chain.UID == "" {
			chain.UID = "warden-audit:" + r.Hash
		}
		for _, ev := range builder.Events(ocsf.AuditCall(&r)) {
			if chain != nil {
				chain.Attest(ev, &r)
			}
			if err := enc.Encode(ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.Flush()
}
