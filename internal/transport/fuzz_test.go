package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzEventReader: any byte stream is read into events without a panic,
// none carries more data than the limit, and an event read back from what
// WriteEvent wrote is the same event.
func FuzzEventReader(f *testing.F) {
	for _, s := range []string{
		"data: {}\n\n",
		"event: message\nid: 7\ndata: a\ndata: b\n\n",
		": keep-alive\n\nretry: 10\ndata: x\r\n\r\n",
		"data:no-space\n\ndata: cut",
		"id: a\x00b\ndata: z\n\n",
		"data: " + string(bytes.Repeat([]byte{'y'}, 300)) + "\n\n",
		"event: \ndata\n\n",
	} {
		f.Add([]byte(s))
	}
	const limit = 256
	f.Fuzz(func(t *testing.T, stream []byte) {
		er := NewEventReader(bytes.NewReader(stream), limit)
		defer er.release()
		for range len(stream) + 1 { // an event takes at least one byte
			ev, err := er.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if len(ev.Data) > limit {
				t.Fatalf("an event of %d bytes passed the %d byte limit", len(ev.Data), limit)
			}
			if bytes.ContainsRune(ev.Data, '\r') || bytes.ContainsAny([]byte(ev.Name+ev.ID), "\r\n") {
				continue // CR alone is a line end to some readers: not written back as it was read
			}
			var b bytes.Buffer
			if err := WriteEvent(&b, ev); err != nil {
				t.Fatal(err)
			}
			back := NewEventReader(&b, limit+1)
			got, err := back.Next()
			back.release()
			if err != nil {
				t.Fatalf("%q does not read back: %v", b.String(), err)
			}
			if got.Name != ev.Name || got.ID != ev.ID || !bytes.Equal(got.Data, ev.Data) {
				t.Fatalf("read %+v, wrote %q, read back %+v", ev, b.String(), got)
			}
		}
		t.Fatal("more events than bytes")
	})
}
