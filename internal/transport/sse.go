package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Event is one server-sent event (text/event-stream). Only the fields MCP
// uses are kept: the event type, its id (for resumption) and its data.
type Event struct {
	Name string // "event:" field; "" means "message"
	ID   string // "id:" field; "" when absent
	Data []byte // "data:" lines joined with '\n'
}

// WriteEvent writes e to w in text/event-stream framing, in one w.Write.
// Data containing newlines is split over several data lines, as the format
// requires.
func WriteEvent(w io.Writer, e Event) error {
	bp := eventBufs.Get().(*[]byte)
	b := (*bp)[:0]
	if e.Name != "" {
		b = append(append(append(b, "event: "...), e.Name...), '\n')
	}
	if e.ID != "" {
		b = append(append(append(b, "id: "...), e.ID...), '\n')
	}
	b = appendEventData(b, e.Data)
	_, err := w.Write(b)
	if cap(b) <= maxPooledEvent {
		*bp = b
		eventBufs.Put(bp)
	}
	return err
}

// appendEventData appends data as the data lines of an event, and the blank
// line that ends it.
func appendEventData(b, data []byte) []byte {
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		b = append(b, "data: "...)
		b = append(b, bytes.TrimSuffix(line, []byte{'\r'})...)
		b = append(b, '\n')
		if !more {
			return append(b, '\n')
		}
		data = rest
	}
}

// eventBufs recycles the buffers WriteEvent frames events in; one larger
// than maxPooledEvent is left to the garbage collector.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledEvent = 64 << 10

// ErrEventTooLarge is returned by EventReader.Next when an event's data would
// exceed the reader's limit.
var ErrEventTooLarge = errors.New("sse: event larger than limit")

// EventReader reads server-sent events from a stream.
type EventReader struct {
	r     *bufio.Reader
	max   int
	retry int // last "retry:" value in milliseconds, 0 if none
	long  []byte
}

// NewEventReader returns a reader whose events carry at most maxData bytes of
// data. Lines longer than that are rejected without being buffered whole.
func NewEventReader(r io.Reader, maxData int) *EventReader {
	er := new(EventReader)
	er.init(r, maxData)
	return er
}

// init readies a zero EventReader, as NewEventReader does.
func (er *EventReader) init(r io.Reader, maxData int) {
	// A small buffer, recycled by release: one is needed per stream, that is
	// per relayed request on HTTP; longer lines are assembled from several
	// reads.
	br := eventReaders.Get().(*bufio.Reader)
	br.Reset(r)
	er.r, er.max = br, maxData
}

var eventReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// release returns the reader's buffer for reuse; er must not be used after.
func (er *EventReader) release() {
	er.r.Reset(nil)
	eventReaders.Put(er.r)
	er.r = nil
}

// Retry returns the last reconnection delay the server asked for, in
// milliseconds, or 0.
func (er *EventReader) Retry() int { return er.retry }

// Next returns the next event that carries data. Comment lines and events
// without data (keep-alives) are skipped. It returns io.EOF at the end of the
// stream, and io.ErrUnexpectedEOF if the stream ends inside an event. The
// event's Data is its own: it is not overwritten by later calls.
func (er *EventReader) Next() (Event, error) {
	var ev Event
	var data []byte // nil until the first data line
	inEvent := false
	for {
		line, err := er.readLine()
		if err != nil {
			if err == io.EOF && inEvent {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 { // blank line: dispatch
			if data != nil {
				ev.Data = data
				return ev, nil
			}
			ev, inEvent = Event{}, false
			continue
		}
		inEvent = true
		if line[0] == ':' {
			continue // comment
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			if string(value) == "message" {
				ev.Name = "message" // the usual name, without a copy
			} else {
				ev.Name = string(value)
			}
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		case "data":
			if len(data)+len(value)+1 > er.max {
				return Event{}, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, er.max)
			}
			if data != nil {
				data = append(data, '\n')
			} else {
				data = make([]byte, 0, len(value))
			}
			data = append(data, value...)
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				er.retry = n
			}
		}
	}
}

// readLine returns one line without its LF or CRLF terminator. The line is
// only valid until the next call. Lines longer than the data limit are an
// error.
func (er *EventReader) readLine() ([]byte, error) {
	chunk, err := er.r.ReadSlice('\n')
	if err == nil && len(chunk) <= er.max+64 { // the usual case: the whole line is in the buffer
		return trimEOL(chunk), nil
	}
	line := append(er.long[:0], chunk...)
	for err == bufio.ErrBufferFull {
		if len(line) > er.max+64 {
			return nil, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, er.max)
		}
		chunk, err = er.r.ReadSlice('\n')
		line = append(line, chunk...)
	}
	if cap(line) <= 64<<10 {
		er.long = line // reused for the next long line
	}
	if len(line) > er.max+64 {
		return nil, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, er.max)
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return bytes.TrimRight(line, "\r"), nil
		}
		return nil, err
	}
	return trimEOL(line), nil
}

// trimEOL removes a line's LF or CRLF terminator.
func trimEOL(line []byte) []byte {
	line = line[:len(line)-1]
	return bytes.TrimSuffix(line, []byte{'\r'})
}
