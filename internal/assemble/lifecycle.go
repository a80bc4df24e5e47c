package assemble

import (
	"errors"
	"io"
)

// lifecycle is what a build has opened so far: each store, file, exporter
// and child is provided to it the moment it is opened, so that when a later
// step fails, cleanup closes all of them, newest first. The steps never
// close anything themselves. When the build succeeds the lifecycle is
// dropped and gateway.Options owns what was opened (Options.Closers and
// each Upstream.Close, which Gateway.Close and a refusing gateway.New
// close).
//
//	open A ─► provide(A) ─► open B ─► provide(B) ─► step fails ─► cleanup: B, A
type lifecycle struct {
	undo []func() error
}

// provide records that c is open; a nil c is ignored.
func (l *lifecycle) provide(c io.Closer) {
	if c != nil {
		l.undo = append(l.undo, c.Close)
	}
}

// provideFunc records a release that reports no error (a shared stdio
// child, an HTTP client's idle connections).
func (l *lifecycle) provideFunc(f func()) {
	if f != nil {
		l.undo = append(l.undo, func() error { f(); return nil })
	}
}

// cleanup closes everything provided, newest first, and reports every
// failure.
func (l *lifecycle) cleanup() error {
	var errs []error
	for i := len(l.undo) - 1; i >= 0; i-- {
		errs = append(errs, l.undo[i]())
	}
	l.undo = nil
	return errors.Join(errs...)
}

// closerFunc adapts a function to io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

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
