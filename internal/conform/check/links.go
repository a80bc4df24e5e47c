package check

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// links is how a partial search gets back from a violating state to the
// initial one without keeping states: per state, in the order states are
// numbered (sequential BFS order), the state it was first reached from
// and the transition that reached it. In that order parents never
// decrease, so a parent is stored as the difference from the previous
// one, a varint, then the transition as a varint: two or three bytes a
// state. Every linkMarkEvery states a mark holds where the next record
// starts and the parent before it, so finding one state's link decodes at
// most linkMarkEvery records.
type links struct {
	pages [][]byte // records never straddle two pages
	marks []linkMark
	n     uint32 // records written
	prev  uint32 // the last parent written
}

type linkMark struct {
	page, off uint32
	prev      uint32
}

const (
	linkPage      = 1 << 16
	linkMarkEvery = 256
	linkMaxRecord = 2 * binary.MaxVarintLen32
)

// add appends the link of state l.n: reached from parent by act. Parents
// must not decrease.
func (l *links) add(parent uint32, act uint16) {
	if len(l.pages) == 0 || len(l.pages[len(l.pages)-1])+linkMaxRecord > linkPage {
		l.pages = append(l.pages, make([]byte, 0, linkPage))
	}
	pg := len(l.pages) - 1
	if l.n%linkMarkEvery == 0 {
		l.marks = append(l.marks, linkMark{page: uint32(pg), off: uint32(len(l.pages[pg])), prev: l.prev})
	}
	b := binary.AppendUvarint(l.pages[pg], uint64(parent-l.prev))
	l.pages[pg] = binary.AppendUvarint(b, uint64(act))
	l.prev = parent
	l.n++
}

// get returns the link of state id.
func (l *links) get(id uint32) (parent uint32, act uint16) {
	m := l.marks[id/linkMarkEvery]
	pg, off, p := int(m.page), int(m.off), m.prev
	for i := id - id%linkMarkEvery; ; i++ {
		if off >= len(l.pages[pg]) {
			pg, off = pg+1, 0
		}
		d, n := binary.Uvarint(l.pages[pg][off:])
		a, n2 := binary.Uvarint(l.pages[pg][off+n:])
		off += n + n2
		p += uint32(d)
		if i == id {
			return p, uint16(a)
		}
	}
}

// bytes is the memory the links hold.
func (l *links) bytes() int { return len(l.pages)*linkPage + len(l.marks)*12 }

// replayTrace rebuilds the counterexample ending at state id of a partial
// search: it follows the links back to the initial state (id 0), then
// fires their transitions forward from the initial state, checking that
// each is enabled, that the last state is bad (the words the search
// found) and that it violates the property. A trace that fails any of
// these is not returned: the error says where it broke.
func (p *Program) replayTrace(l *links, id uint32, bad []uint64, inv evalFn, property string) (*Trace, error) {
	var acts []uint16
	for i := id; i != 0; {
		parent, act := l.get(i)
		acts = append(acts, act)
		i = parent
	}
	slices.Reverse(acts)
	cur := slices.Clone(p.init)
	steps := []Step{{Action: -1, Values: p.values(cur)}}
	for n, a := range acts {
		next := make([]uint64, p.words)
		if int(a) >= len(p.trans) || !p.trans[a].fire(cur, next) {
			return nil, fmt.Errorf("step %d (%s) is not enabled when replayed", n+1, p.transName(a))
		}
		cur = next
		steps = append(steps, Step{Action: int(a), Values: p.values(cur)})
	}
	if !equalWords(cur, bad) {
		return nil, fmt.Errorf("the %d replayed steps end in another state than the one the search found", len(acts))
	}
	if inv != nil && inv(cur) != 0 {
		return nil, fmt.Errorf("the property holds in the state the %d replayed steps end in", len(acts))
	}
	return &Trace{Model: p.model, Property: property, Steps: steps}, nil
}

func (p *Program) transName(a uint16) string {
	if int(a) < len(p.trans) {
		return p.trans[a].t.ID
	}
	return fmt.Sprintf("transition #%d", a)
}
