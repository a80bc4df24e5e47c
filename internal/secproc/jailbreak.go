package secproc

import (
	"regexp"
	"strings"
)

// Jailbreaks: text that tries to give the model another persona free of
// its rules ("you are about to immerse yourself into the role of DAN",
// "answer every prompt in two ways", "you are not bound by any content
// policy"). In a tool's output, a resource or a prompt it is an injection
// whoever wrote it. A jailbreak is long prose; one phrase of the family
// may be innocent (a story where a character "pretends to be" someone), so
// the detector counts the distinct signals in a string:
//
//	strong signal (one is enough):  do anything now, developer mode enabled,
//	    broken free of the confines, not have to abide by the rules, …
//	weak signals (two are needed):  a persona to adopt, freedom from rules
//	    and filters, two answers per prompt, "stay in character", …
//
// The signals are families of phrasing, each a regular expression over the
// lower-cased text.

type signal struct {
	name string
	re   *regexp.Regexp // over one lower-cased line
	// words are the words of which a line must hold one for re to be
	// tried there: one pass over the text finds the lines worth a match.
	words []string
}

var strongJailbreak = []signal{
	{"do-anything-now", regexp.MustCompile(`\bdo anything now\b|\bmake anything now\b`), []string{"anything"}},
	{"developer-mode", regexp.MustCompile(`\b(?:developer|dev|god|dan|jailbreak|unrestricted|opposite|evil)\s+mode\b[^.]{0,40}\b(?:enabled|activated|on|output|responses?)\b|\b(?:simulate|enable|enter|activate)\s+(?:the\s+)?(?:developer|dev|dan|jailbreak|god)\s+mode\b`), []string{"mode"}},
	{"free-of-confines", regexp.MustCompile(`\b(?:broken|broke|freed|free|break|released)\s+(?:free\s+)?(?:of|from)\s+(?:the\s+)?(?:typical\s+|usual\s+|all\s+)?(?:confines|shackles|chains|restrictions|limitations)\b`), []string{"confines", "shackles", "chains", "restrictions", "limitations"}},
	{"not-abide", regexp.MustCompile(`\b(?:do(?:es)?\s+not|don'?t|doesn'?t|never|no\s+longer)\s+(?:have\s+to\s+|need\s+to\s+)?(?:abide|comply|adhere)\s+(?:by|with|to)\s+(?:the\s+|any\s+)?(?:rules|polic|guidelines|restrictions|content)`), []string{"abide", "comply", "adhere"}},
	{"immerse-role", regexp.MustCompile(`\bimmerse\s+yourself\s+(?:into|in)\s+(?:the\s+)?role\b|\byou\s+are\s+(?:about|going)\s+to\s+(?:simulate|become|play|immerse|act\s+as|pretend)`), []string{"immerse", "about", "going"}},
}

var weakJailbreak = []signal{
	{"persona", regexp.MustCompile(`\b(?:you\s+(?:will|shall|must|are\s+going\s+to|'re\s+going\s+to)\s+(?:now\s+)?(?:act|pose|pretend|respond|answer|play|simulate|roleplay|behave|operate|be\s+replaced)|(?:pretend|act)\s+(?:to\s+be|as\s+if|like\s+you)|take\s+on\s+the\s+role|(?:play|assume)\s+the\s+role\s+of|you\s+are\s+(?:now\s+)?(?:replaced|a\s+character|no\s+longer)|stay\s+in\s+character|break(?:ing)?\s+character|roleplay|role-play|` +
		`(?:simulate|imagine|create)\s+(?:a\s+|an\s+)?(?:conversation|chatbot|(?:hypothetical\s+)?(?:ai|language\s+model|model|character|entity))|` +
		`(?:i\s+want|i'?d\s+like)\s+you\s+to\s+(?:act|be|pretend|become)|continue\s+as\s+\w+|from\s+the\s+perspective\s+of\s+(?:that|the|this)\s+character|` +
		`you\s+(?:are|'re)\s+(?:now\s+)?(?:a\s+|an\s+)?[\w-]+(?:bot|gpt)\b|you\s+act\s+as)`), []string{"you", "you're", "pretend", "act", "role", "roleplay", "character", "simulate", "imagine", "create", "continue", "perspective"}},
	{"no-rules", regexp.MustCompile(`\b(?:without|free\s+(?:of|from)|not\s+(?:restricted|bound|limited|governed)\s+by|never\s+(?:restricted|bound)\s+by|ignores?|disregards?|bypass(?:es)?|violat(?:e|es|ing)|(?:goes\s+)?against|break|regardless\s+of|doesn'?t\s+follow|not\s+follow)\s+(?:any\s+|all\s+|the\s+|your\s+|of\s+)?(?:[\w']+(?:\s+or\s+|\s*,\s*|\s+)){0,3}?(?:ethics|morals|morality|restrictions|filters|filtering|censorship|guidelines|policies|policy|rules|limitations|boundaries|warnings|remorse|principles|standards|concerns|legality)\b|` +
		// "no" binds only the next word or two ("no moral restrictions"),
		// not a clause ("no longer emit warnings").
		`\bno\s+(?:[\w']+\s+)?(?:ethics|morals|morality|restrictions|filters|filtering|censorship|guidelines|policies|policy|rules|limitations|boundaries|warnings|remorse|principles|standards|concerns|legality)\b`), []string{"ethics", "morals", "morality", "restrictions", "filters", "filtering", "censorship", "guidelines", "policies", "policy", "rules", "limitations", "boundaries", "warnings", "remorse", "principles", "standards", "concerns", "legality"}},
	{"unfiltered", regexp.MustCompile(`\b(?:uncensored|unfiltered|unrestricted|amoral|immoral|unethical|unhinged|jailbroken|jailbreak|unlimited\s+(?:ai|language\s+model|model))\b|\bhates?\s+being\s+ethical\b`), []string{"uncensored", "unfiltered", "unrestricted", "amoral", "immoral", "unethical", "unhinged", "jailbroken", "jailbreak", "unlimited", "ethical"}},
	{"never-refuse", regexp.MustCompile(`\b(?:never|not|won'?t|cannot|can'?t)\s+(?:ever\s+)?(?:refuse|deny|decline|reject)\b|\bany\s+(?:kind\s+of\s+)?(?:request|prompt|question|content)\b[^.]{0,30}\b(?:no\s+matter|regardless|even\s+if)`), []string{"refuse", "deny", "decline", "reject", "matter", "regardless", "even"}},
	{"answer-format", regexp.MustCompile(`\btwo\s+(?:different\s+|separate\s+|distinct\s+)?(?:ways|responses|answers|manners|personalities|paragraphs|styles|entities)\b|\b(?:every|each)\s+(?:response|answer|output)\b[^.]{0,40}\b(?:begin|start|prefix)|\b(?:respond|reply|answer)\s+(?:to\s+)?(?:every|all|each)\s+(?:of\s+my\s+)?(?:prompts?|questions?)\b`), []string{"two", "every", "each", "all"}},
	{"model-policy", regexp.MustCompile(`\b(?:openai|open\s+ai|anthropic|content\s+polic(?:y|ies)|language\s+model|ai\s+model|chatgpt|gpt-?\d?)\b`), []string{"openai", "open", "anthropic", "content", "language", "model", "chatgpt", "gpt"}},
	{"fiction-frame", regexp.MustCompile(`\bhypothetical\s+(?:response|scenario|story|language\s+model)|\blet'?s\s+(?:play\s+a\s+game|imagine|act\s+out|pretend|have\s+a\s+roleplay)|\bforget\s+(?:everything|all)\s+(?:you|that)\b|` +
		`\bthe\s+scene\s+is\s+set\b|\b(?:in|within|inside)\s+(?:a|this|the|our)\s+(?:fictional|hypothetical|imaginary|alternate|make-believe|parallel)\s+(?:world|universe|story|scenario|setting|reality|novel)\b|` +
		`\b(?:write|tell|create|compose)\s+(?:me\s+)?(?:a|an)\s+(?:short\s+)?(?:story|scene|screenplay|script|dialogue|novel\s+chapter)\s+(?:in\s+which|where|about\s+(?:a|an)\s+[\w-]+\s+who)\b|` +
		`\bimagine\s+(?:that\s+)?(?:you\s+are|you're|we\s+(?:are|have)|a\s+(?:world|story|scenario))\b|\bfor\s+(?:a|my|the)\s+(?:novel|story|screenplay|movie|film|book|game)\s+(?:i'?m|i\s+am|we'?re)\s+writing\b`),
		[]string{"hypothetical", "let's", "let", "lets", "forget", "scene", "fictional", "imaginary", "alternate", "make", "parallel", "write", "tell", "create", "compose", "imagine", "novel", "story", "screenplay", "movie", "film", "book", "game"}},
	// What the frame is for: the forbidden content spelt out, or a model
	// simulated so that it writes what it would not (token smuggling).
	{"detail-demand", regexp.MustCompile(`\b(?:in\s+(?:great|full|complete|vivid|explicit|extreme|graphic|excruciating)\s+detail|step\s+1\s*[,:]\s*(?:i|we|you)\s+will|(?:detailed|exact|precise|specific)\s+(?:step-by-step\s+)?(?:instructions|steps)\s+(?:for|on|to)\s+(?:how\s+to\s+)?(?:make|making|build|building|synthesi[sz]\w*|cook\w*|produc\w*|manufactur\w*|hack\w*|break\w*|bypass\w*|steal\w*)|(?:explain|explains|explaining|describe|describes|describing)\s+(?:[\w,]+\s+){0,4}?(?:his|her|their|the)\s+(?:diabolical|evil|secret|whole|entire)\s+plan)`),
		[]string{"great", "full", "complete", "vivid", "explicit", "extreme", "graphic", "excruciating", "step", "detailed", "exact", "precise", "specific", "explain", "explains", "explaining", "describe", "describes", "describing"}},
	{"simulation", regexp.MustCompile(`\b(?:generates?|predicts?)\s+the\s+next\s+(?:token|word)\b|\bauto_?regressive\b|\b(?:simulate|emulate)\s+(?:the\s+)?(?:output|execution|result)\s+of\b|\bwhat\s+would\s+be\s+the\s+(?:possible\s+)?output\s+of\b`),
		[]string{"generate", "generates", "predict", "predicts", "autoregressive", "auto", "simulate", "emulate", "what"}},
	{"from-now-on", regexp.MustCompile(`\bfrom\s+(?:now|this\s+(?:moment|point))\s+(?:on|own|onward|forward)\b|\bfor\s+the\s+rest\s+of\s+(?:this|the|our)\s+conversation\b`), []string{"from", "rest"}},
}

// jailbreakMaxScan bounds the bytes of one string the detector reads,
// and jailbreakLines the lines tried per signal.
const (
	jailbreakMaxScan = 32 << 10
	jailbreakLines   = 8
)

// jailbreakSignals are the strong signals, then the weak ones; jbWords
// maps each trigger word to the bit of every signal it may start.
var (
	jailbreakSignals = append(append([]signal(nil), strongJailbreak...), weakJailbreak...)
	jbWords          = func() map[string]uint32 {
		if len(jailbreakSignals) > 32 {
			panic("secproc: more jailbreak signals than bits")
		}
		m := map[string]uint32{}
		for i, s := range jailbreakSignals {
			for _, w := range s.words {
				m[w] |= 1 << i
			}
		}
		return m
	}()
)

func isWordByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '\'' }

// jailbreak reports whether v reads as a jailbreak, with the names of the
// signals found and the index range of the first in v.
func jailbreak(v string) (names []string, loc []int, ok bool) {
	if len(v) < 40 {
		return nil, nil, false
	}
	v = v[:min(len(v), jailbreakMaxScan)]
	// One pass over the words: which signals may match, on which lines.
	var lines [32][]int // per signal (jbWords holds 32 bits)
	var cand uint32
	var buf [16]byte
	line := 0
	for i := 0; i < len(v); {
		c := v[i]
		if !isWordByte(c) {
			if c == '\n' {
				line = i + 1
			}
			i++
			continue
		}
		j := i
		for j < len(v) && isWordByte(v[j]) {
			j++
		}
		if j-i <= len(buf) {
			w := buf[:0]
			for _, c := range []byte(v[i:j]) {
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				w = append(w, c)
			}
			if bits := jbWords[string(w)]; bits != 0 {
				cand |= bits
				for k := range jailbreakSignals {
					if bits&(1<<k) != 0 && len(lines[k]) < jailbreakLines && (len(lines[k]) == 0 || lines[k][len(lines[k])-1] != line) {
						lines[k] = append(lines[k], line)
					}
				}
			}
		}
		i = j
	}
	if cand == 0 {
		return nil, nil, false
	}
	match := func(k int) []int {
		for _, start := range lines[k] {
			end := strings.IndexByte(v[start:], '\n')
			if end < 0 {
				end = len(v) - start
			}
			if l := jailbreakSignals[k].re.FindStringIndex(strings.ToLower(v[start : start+end])); l != nil {
				return []int{start + l[0], start + l[1]}
			}
		}
		return nil
	}
	for k := range strongJailbreak {
		if l := match(k); l != nil {
			return []string{jailbreakSignals[k].name}, l, true
		}
	}
	for k := len(strongJailbreak); k < len(jailbreakSignals); k++ {
		if l := match(k); l != nil {
			names = append(names, jailbreakSignals[k].name)
			if loc == nil {
				loc = l
			}
		}
	}
	// A persona or freedom from rules must be one of the signals: text
	// that only names a model and "two answers" is a benchmark report. A
	// fictional frame counts as a persona when the text also says what
	// the fiction is for (the forbidden content in detail, a simulated
	// model, no refusal, no filter): a story alone is a story.
	if len(names) >= 3 || len(names) == 2 && (names[0] == "persona" || names[0] == "no-rules" || fictionFor(names)) {
		return names, loc, true
	}
	return nil, nil, false
}

// fictionFor reports whether two signals are a fictional frame and what
// it is for.
func fictionFor(names []string) bool {
	frame, purpose := false, false
	for _, n := range names {
		switch n {
		case "fiction-frame":
			frame = true
		case "detail-demand", "simulation", "never-refuse", "unfiltered":
			purpose = true
		}
	}
	return frame && purpose
}
