package check

import "math/bits"

// A state is packed into words of 64 bits: every variable's value, offset
// by its minimum, in a fixed bit field of one word (a field never straddles
// two words). Two states are equal exactly when their words are. A model
// whose variables fit in 128 bits uses two words or fewer; a wider one uses
// as many as it needs.

// noParent is the initial state's parent.
const noParent = ^uint32(0)

// hashWords mixes a state's words into 64 bits.
func hashWords(k []uint64) uint64 {
	h := uint64(len(k)) * 0x9e3779b97f4a7c15
	for _, w := range k {
		hi, lo := bits.Mul64(h^w, 0xbf58476d1ce4e5b9)
		h = hi ^ lo
	}
	return h ^ h>>29
}

func equalWords(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
