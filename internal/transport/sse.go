package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Event is one server-sent event (text/event-stream). Only the fields MCP
// uses are kept: the event type, its id (for resumption) and its data.
type Event struct {
	Name string // "event:" field; "" means "message"
	ID   string // "id:" field; "" when absent
	Data []byte // "data:" lines joined with '\n'
}

// WriteEvent writes e to w in text/event-stream framing. Data containing
// newlines is split over several data lines, as the format requires.
func WriteEvent(w io.Writer, e Event) error {
	var b bytes.Buffer
	if e.Name != "" {
		b.WriteString("event: ")
		b.WriteString(e.Name)
		b.WriteByte('\n')
	}
	if e.ID != "" {
		b.WriteString("id: ")
		b.WriteString(e.ID)
		b.WriteByte('\n')
	}
	for _, line := range bytes.Split(e.Data, []byte{'\n'}) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte{'\r'}))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// ErrEventTooLarge is returned by EventReader.Next when an event's data would
// exceed the reader's limit.
var ErrEventTooLarge = errors.New("sse: event larger than limit")

// EventReader reads server-sent events from a stream.
type EventReader struct {
	r     *bufio.Reader
	max   int
	retry int // last "retry:" value in milliseconds, 0 if none
}

// NewEventReader returns a reader whose events carry at most maxData bytes of
// data. Lines longer than that are rejected without being buffered whole.
func NewEventReader(r io.Reader, maxData int) *EventReader {
	// A small buffer: one is made per stream, that is per relayed request on
	// HTTP; longer lines are assembled from several reads.
	return &EventReader{r: bufio.NewReaderSize(r, 4<<10), max: maxData}
}

// Retry returns the last reconnection delay the server asked for, in
// milliseconds, or 0.
func (er *EventReader) Retry() int { return er.retry }

// Next returns the next event that carries data. Comment lines and events
// without data (keep-alives) are skipped. It returns io.EOF at the end of the
// stream, and io.ErrUnexpectedEOF if the stream ends inside an event.
func (er *EventReader) Next() (Event, error) {
	var ev Event
	var data bytes.Buffer
	hasData, inEvent := false, false
	for {
		line, err := er.readLine()
		if err != nil {
			if err == io.EOF && inEvent {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 { // blank line: dispatch
			if hasData {
				ev.Data = data.Bytes()
				return ev, nil
			}
			ev, hasData, inEvent = Event{}, false, false
			data.Reset()
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
			ev.Name = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		case "data":
			if data.Len()+len(value)+1 > er.max {
				return Event{}, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, er.max)
			}
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 {
				er.retry = n
			}
		}
	}
}

// readLine returns one line without its LF or CRLF terminator. Lines longer
// than the data limit are an error.
func (er *EventReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := er.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > er.max+64 {
			return nil, fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, er.max)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return bytes.TrimRight(line, "\r"), nil
			}
			return nil, err
		}
		line = line[:len(line)-1]
		return bytes.TrimSuffix(line, []byte{'\r'}), nil
	}
}
