package audit

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

const envFullRoom = "WARDEN_AUDIT_FULL_ROOM" // bytes the log may still grow by

// TestDiskFullHelper is not a test: it is the child process of
// TestDiskFull. It limits its own file size (RLIMIT_FSIZE) to the log's
// size plus the room given, as a full disk would, then appends from 8
// goroutines, printing "ack SEQ HASH" for each Append that returned and
// "refused ERR" for each that failed, and stops after 40 refusals; then
// it appends one record at a time until one is refused, and prints Ping.
func TestDiskFullHelper(t *testing.T) {
	path := os.Getenv(envKillPath)
	if path == "" {
		t.Skip("the child process of TestDiskFull")
	}
	room, err := strconv.ParseUint(os.Getenv(envFullRoom), 10, 64)
	if err != nil {
		fmt.Println("room:", err)
		os.Exit(3)
	}
	l, err := Open(context.Background(), Kind(os.Getenv(envKillKind)), path, Options{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	var size uint64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			size = max(size, uint64(fi.Size()))
		}
	}
	// The Go runtime ignores SIGXFSZ: a write past the limit fails (EFBIG).
	lim := syscall.Rlimit{Cur: size + room, Max: size + room}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(3)
	}
	var (
		mu      sync.Mutex
		refused int
		wg      sync.WaitGroup
	)
	out := bufio.NewWriter(os.Stdout)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				rec, err := l.Append(context.Background(), sample(w*1_000_000+i))
				mu.Lock()
				if err != nil {
					refused++
					fmt.Fprintf(out, "refused %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
				} else {
					fmt.Fprintf(out, "ack %d %s\n", rec.Seq, rec.Hash)
				}
				out.Flush()
				done := refused >= 40
				mu.Unlock()
				if done {
					return
				}
			}
		})
	}
	wg.Wait()
	// A refused batch of several records can leave room for a smaller
	// one, so the last concurrent write may have succeeded and Ping is
	// then right to say nil. One record at a time, the log fills until
	// even a single record no longer fits; that write is the last.
	for i := 0; ; i++ {
		rec, err := l.Append(context.Background(), sample(9_000_000+i))
		if err != nil {
			fmt.Fprintf(out, "refused %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
			break
		}
		fmt.Fprintf(out, "ack %d %s\n", rec.Seq, rec.Hash)
		if i == 10_000 {
			fmt.Fprintln(out, "never full: 10000 more records fitted")
			break
		}
	}
	fmt.Fprintf(out, "ping %v\n", l.Ping(context.Background()))
	out.Flush()
	os.Exit(0) // without Close: the process ends as a full disk may leave it
}

// TestDiskFull fills the log's disk in a child process (RLIMIT_FSIZE on
// the child only) while 8 goroutines append. Once the log cannot grow,
// every Append must fail (the gateway then refuses the call), /readyz's
// Ping must say so, and with room again the log must hold every record
// whose Append returned, verify, and take new records.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		path := be.path(t)
		l := openLog(t, be, path)
		mustAppend(t, l, sample(0)) // the log exists before the limit
		l.Close()

		cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFullHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), envKillPath+"="+path, envKillKind+"="+string(be.kind), envFullRoom+"="+strconv.Itoa(64<<10))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		acked := map[uint64]string{}
		var refusals []string
		var ping string
		for line := range strings.Lines(string(out)) {
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "ack":
				seq, err := strconv.ParseUint(f[1], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				acked[seq] = f[2]
			case len(f) > 0 && f[0] == "refused":
				refusals = append(refusals, line)
			case len(f) > 0 && f[0] == "ping":
				ping = strings.TrimSpace(line)
			default:
				t.Fatalf("child: %s", line)
			}
		}
		t.Logf("%d records acknowledged before the disk was full, then %d refused; first refusal: %s",
			len(acked), len(refusals), strings.TrimSpace(refusals[0]))
		if len(acked) < 20 {
			t.Errorf("only %d appends succeeded in 64 KiB of room", len(acked))
		}
		if ping == "ping <nil>" || !strings.Contains(ping, "the last write failed") {
			t.Errorf("Ping on a full disk: %q, want the last write's failure", ping)
		}

		// Room again: every acknowledged record is there, unchanged.
		l = openLog(t, be, path)
		stored := map[uint64]string{}
		for _, r := range scanAll(t, l.b) {
			stored[r.Seq] = r.Hash
		}
		for seq, h := range acked {
			if stored[seq] != h {
				t.Fatalf("acknowledged record %d is missing or changed after the disk was full", seq)
			}
		}
		mustVerify(t, l.b)
		head := l.Head()
		next := mustAppend(t, l, sample(9))
		if next.Seq != head.Seq+1 || next.PrevHash != head.Hash {
			t.Errorf("append after the disk had room again: seq %d, want %d", next.Seq, head.Seq+1)
		}
	})
}
