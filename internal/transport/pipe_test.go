package transport

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

func TestPipeDeliversCopies(t *testing.T) {
	a, b := Pipe()
	defer a.Close()
	sent := contractMsg(t, validLine)
	go a.Write(context.Background(), sent)
	got := mustRead(t, b)
	if got == sent {
		t.Fatal("Read returned the writer's *Message itself")
	}
	got.Method = "changed by the reader"
	if sent.Method != "ping" {
		t.Errorf("the reader's change reached the writer's message: Method = %q", sent.Method)
	}
}

func TestPipeWriteWaitsForReader(t *testing.T) {
	a, b := Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Write(ctx, contractMsg(t, validLine)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write with no reader: %v, want context.DeadlineExceeded", err)
	}
}

func TestPipeCloseErrors(t *testing.T) {
	a, b := Pipe()
	a.Close()
	m := contractMsg(t, validLine)
	// The closing side sees ErrClosed, the peer sees the end of the stream.
	if _, err := a.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("a.Read: %v, want ErrClosed", err)
	}
	if err := a.Write(context.Background(), m); !errors.Is(err, ErrClosed) {
		t.Errorf("a.Write: %v, want ErrClosed", err)
	}
	if _, err := b.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("b.Read: %v, want io.EOF", err)
	}
	if err := b.Write(context.Background(), m); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("b.Write: %v, want io.ErrClosedPipe", err)
	}
	b.Close()
	if _, err := b.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("b.Read after b.Close: %v, want ErrClosed", err)
	}
}
