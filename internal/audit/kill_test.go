package audit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	envKillPath = "WARDEN_AUDIT_KILL_PATH"
	envKillKind = "WARDEN_AUDIT_KILL_KIND"
	envKillKey  = "WARDEN_AUDIT_KILL_KEY" // the audit key: checkpoints every 7 records
)

// TestKillHelper is not a test: it is the child process of
// TestKillAndRestart. It appends from 16 goroutines (so that the writer's
// batches hold several records, and the kill lands mid-batch) until it is
// killed, printing "ack <seq> <hash>" after each Append returned.
func TestKillHelper(t *testing.T) {
	path := os.Getenv(envKillPath)
	if path == "" {
		t.Skip("the child process of TestKillAndRestart")
	}
	var opts Options
	if f := os.Getenv(envKillKey); f != "" {
		key, err := LoadSigningKey(f)
		if err != nil {
			fmt.Println("key:", err)
			os.Exit(3)
		}
		opts.Checkpoint = CheckpointOptions{Key: key, Every: 7, Interval: 3 * time.Millisecond}
	}
	l, err := Open(context.Background(), Kind(os.Getenv(envKillKind)), path, opts)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for w := range 16 {
		go func() {
			for i := 0; ; i++ {
				rec, err := l.Append(context.Background(), sample(w*1_000_000+i))
				if err != nil {
					fmt.Println("append:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %d %s\n", rec.Seq, rec.Hash)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestKillAndRestart SIGKILLs a process in the middle of appending, three
// times, and checks after each kill that every acknowledged record is in the
// log, the log verifies, and appends continue the chain.
func TestKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		path := be.path(t)
		acked := make(map[uint64]string)
		for round := range 3 {
			killChildWhileAppending(t, be, path, "", acked, 150)

			// What the kill left is a log that verifies as it is (a torn
			// line at the end, and the zeros a JSONL file grows by, are
			// ignored), before anything repairs it.
			if be.kind == KindJSONL {
				if b, err := os.ReadFile(path); err != nil || len(b) == 0 || b[len(b)-1] != 0 {
					t.Fatalf("round %d: the killed log's file does not end in the zeros it grew by (%d bytes, %v)", round, len(b), err)
				}
			}
			mustVerify(t, openBackend(t, be, path))
			l := openLog(t, be, path)
			head := l.Head()
			var maxAcked uint64
			for seq := range acked {
				maxAcked = max(maxAcked, seq)
			}
			if head.Seq < maxAcked {
				t.Fatalf("round %d: log ends at seq %d but seq %d was acknowledged", round, head.Seq, maxAcked)
			}
			stored := make(map[uint64]string)
			for _, r := range scanAll(t, l.b) {
				stored[r.Seq] = r.Hash
			}
			for seq, h := range acked {
				if stored[seq] != h {
					t.Fatalf("round %d: acknowledged record %d is missing or changed", round, seq)
				}
			}
			mustVerify(t, l.b)
			next := mustAppend(t, l, sample(round))
			if next.Seq != head.Seq+1 || next.PrevHash != head.Hash {
				t.Fatalf("round %d: append after restart: seq %d prev %s, want seq %d prev %s",
					round, next.Seq, next.PrevHash, head.Seq+1, head.Hash)
			}
			acked[next.Seq] = next.Hash
			l.Close()
			if be.kind == KindJSONL {
				if b, err := os.ReadFile(path); err != nil || bytes.IndexByte(b, 0) >= 0 || !bytes.HasSuffix(b, []byte("}\n")) {
					t.Fatalf("round %d: after the restart and a close the log is not plain JSON Lines (%d bytes, %v)", round, len(b), err)
				}
			}
		}
	})
}

// TestKillWithCheckpoints SIGKILLs a process that signs checkpoints (every
// 7 records and every 3 ms) while it appends: a kill between records and
// their checkpoint must leave a log that opens with the key, keeps every
// acknowledged record, and verifies with the public key, the records the
// dead process left unattested being attested late by the checkpoint the
// next open writes.
func TestKillWithCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		keyFile, sk, vk := newKeyFile(t)
		path := be.path(t)
		acked := make(map[uint64]string)
		late := 0
		for round := range 3 {
			killChildWhileAppending(t, be, path, keyFile, acked, 100)
			l, err := Open(context.Background(), be.kind, path, Options{Checkpoint: CheckpointOptions{Key: sk, Interval: -1}})
			if err != nil {
				t.Fatalf("round %d: the log does not open after the kill: %v", round, err)
			}
			stored := make(map[uint64]string)
			for _, r := range scanAll(t, l.b) {
				stored[r.Seq] = r.Hash
			}
			for seq, h := range acked {
				if stored[seq] != h {
					t.Fatalf("round %d: acknowledged record %d is missing or changed", round, seq)
				}
			}
			l.Close()
			rep := verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}})
			if rep.Problem != nil || rep.Unattested != nil {
				t.Fatalf("round %d: verify --key: %v, unattested %+v, want intact and every record attested after a clean close", round, rep.Problem, rep.Unattested)
			}
			late = len(rep.Reopened)
		}
		t.Logf("%d runs of records were attested late, at the next open", late)
	})
}

// killChildWhileAppending runs TestKillHelper on path, records the records
// it acknowledges into acked, and kills it with SIGKILL after n of them.
func killChildWhileAppending(t *testing.T, be backend, path, keyFile string, acked map[uint64]string, n int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), envKillPath+"="+path, envKillKind+"="+string(be.kind), envKillKey+"="+keyFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	got := 0
	for got < n && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %s", sc.Text())
		}
		seq, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		acked[seq] = f[2]
		got++
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Acknowledgements already printed before the kill landed count too.
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "ack" {
			seq, _ := strconv.ParseUint(f[1], 10, 64)
			acked[seq] = f[2]
		}
	}
	cmd.Wait()
	if got < n {
		t.Fatalf("child acknowledged only %d records before it ended", got)
	}
}
