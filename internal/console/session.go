package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cookieName is the session cookie.
const cookieName = "warden_console"

// maxSessions bounds the session store: a new login beyond it ends the
// session that would expire first.
const maxSessions = 256

// session is one person's login.
type session struct {
	name string // display name; decisions are made as "console:" + name
	// verified is the subject of the JWT the person logged in with (the
	// configured issuer vouches for it); "" for an admin-token login.
	verified string
	// oidc is the subject the OIDC issuer vouched for at login (oidc.go);
	// "" for other logins.
	oidc string
	// breakGlass marks an admin-token login while OIDC is configured.
	breakGlass bool
	csrf       string // synchronizer token for every POST of this session
	expires    time.Time
	flash      string // one message for the next page, then cleared
}

// approver is the identity recorded with the session's decisions: the
// issuer-verified subject of a JWT login, else the display name given with
// the admin token.
func (s *session) approver() string {
	switch {
	case s.oidc != "":
		return "console:oidc:" + s.oidc
	case s.verified != "":
		return "console:jwt:" + s.verified
	case s.breakGlass:
		return "console:break-glass:" + s.name
	}
	return "console:" + s.name
}

// sessionStore holds the sessions in memory, keyed by the SHA-256 of the
// cookie value, so the store never holds a usable cookie.
type sessionStore struct {
	ttl time.Duration // immutable

	mu   sync.Mutex
	byID map[[32]byte]*session // guarded by mu
}

func newSessionStore(ttl time.Duration) *sessionStore {
	return &sessionStore{ttl: ttl, byID: map[[32]byte]*session{}}
}

// create starts a session for name and returns its cookie value.
func (st *sessionStore) create(name string) (id string, s *session) {
	id, csrf := randomToken(), randomToken()
	now := time.Now()
	s = &session{name: name, csrf: csrf, expires: now.Add(st.ttl)}
	st.mu.Lock()
	defer st.mu.Unlock()
	for k, old := range st.byID {
		if now.After(old.expires) {
			delete(st.byID, k)
		}
	}
	if len(st.byID) >= maxSessions {
		var first [32]byte
		var firstExp time.Time
		for k, old := range st.byID {
			if firstExp.IsZero() || old.expires.Before(firstExp) {
				first, firstExp = k, old.expires
			}
		}
		delete(st.byID, first)
	}
	st.byID[sha256.Sum256([]byte(id))] = s
	return id, s
}

// get returns a copy of the live session with cookie value id.
func (st *sessionStore) get(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.byID[k]
	if s == nil {
		return session{}, false
	}
	if time.Now().After(s.expires) {
		delete(st.byID, k)
		return session{}, false
	}
	return *s, true
}

// takeFlash returns and clears the session's flash message.
func (st *sessionStore) takeFlash(id string) string {
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.byID[k]
	if s == nil {
		return ""
	}
	f := s.flash
	s.flash = ""
	return f
}

// setFlash sets the session's message for its next page.
func (st *sessionStore) setFlash(id, msg string) {
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	defer st.mu.Unlock()
	if s := st.byID[k]; s != nil {
		s.flash = msg
	}
}

// end removes the session.
func (st *sessionStore) end(id string) {
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	delete(st.byID, k)
	st.mu.Unlock()
}

// randomToken returns 256 random bits, base64url without padding.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ctxKey carries the request's session to the handlers.
type ctxKey struct{}

type sessionRef struct {
	id string
	s  session
}

// requireSession runs h only for a logged-in request. Logged out, a page
// redirects to the login page, and anything else (the list, the event
// stream, a POST) is refused with no content.
func (c *Console) requireSession(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(cookieName)
		var s session
		ok := err == nil
		if ok {
			s, ok = c.sessions.get(ck.Value)
		}
		if !ok {
			isPage := r.Method == http.MethodGet && r.URL.Path != "/console/pending" && r.URL.Path != "/console/events"
			if isPage {
				http.Redirect(w, r, "/console/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "log in first", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				http.Error(w, "bad form", http.StatusBadRequest)
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
				c.log.Warn("console: POST without the session's CSRF token refused", "path", r.URL.Path, "user", s.name)
				c.renderError(w, r, s, http.StatusForbidden, "This form has expired or did not come from this console (CSRF token missing or wrong). Nothing was changed; reload the page and try again.")
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, sessionRef{ck.Value, s})))
	}
}

// sessionOf returns the request's session, set by requireSession.
func sessionOf(r *http.Request) (id string, s session) {
	ref := r.Context().Value(ctxKey{}).(sessionRef)
	return ref.id, ref.s
}

// setCookie sets (or with maxAge < 0 clears) the session cookie.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/console", MaxAge: maxAge,
		HttpOnly: true, Secure: c.secure || r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", page{Title: "Log in", Data: c.loginData("", "")})
}

type loginData struct {
	Name  string
	Error string
	OIDC  string // the issuer to log in through; "" without OIDC
}

func (c *Console) loginData(name, msg string) loginData {
	d := loginData{Name: name, Error: msg}
	if c.oidc != nil {
		d.OIDC = c.oidc.opts.Issuer
	}
	return d
}

// login exchanges the admin token for a session. The display name becomes
// the approver's identity.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	client := clientOf(r)
	if d := c.logins.wait(client); d > 0 {
		c.log.Warn("console: login refused: too many failures", "name", name, "remote", r.RemoteAddr, "wait", d)
		c.tooMany(w, r, name, d)
		return
	}
	fail := func(msg string) {
		c.render(w, r, http.StatusUnauthorized, "login", page{Title: "Log in", Data: c.loginData(name, msg)})
	}
	failToken := func(msg string) {
		if d := c.logins.failed(client); d > 0 {
			msg += fmt.Sprintf(" Too many failed logins from this address: the next attempt is heard in %s.", roundUp(d))
		}
		fail(msg)
	}
	if !validName(name) {
		fail("Give your name (1 to 64 ASCII letters, digits, spaces or . _ @ -): it is recorded with every decision you make.")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	verified := ""
	switch {
	case c.verifyJWT != nil && strings.Count(token, ".") == 2:
		sub, err := c.verifyJWT(token)
		if err != nil {
			c.log.Warn("console: failed JWT login", "name", name, "remote", r.RemoteAddr, "err", err)
			failToken("That JWT is not valid for this console: " + err.Error())
			return
		}
		verified = sub
	case !c.validToken(token):
		c.log.Warn("console: failed login", "name", name, "remote", r.RemoteAddr)
		failToken("That is not the admin token.")
		return
	}
	c.logins.succeeded(client)
	id, s := c.sessions.create(name)
	s.verified = verified
	s.breakGlass = verified == "" && c.oidc != nil
	c.setCookie(w, r, id, int(time.Until(s.expires).Seconds()))
	c.log.Info("console: login", "approver", s.approver(), "remote", r.RemoteAddr)
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

// tooMany refuses a login attempt that came before the client's wait was
// over, without looking at its token.
func (c *Console) tooMany(w http.ResponseWriter, r *http.Request, name string, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(roundUp(d)/time.Second)))
	c.render(w, r, http.StatusTooManyRequests, "login", page{Title: "Log in", Data: c.loginData(name,
		fmt.Sprintf("Too many failed logins from this address. Wait %s, then try again; this attempt was not checked.", roundUp(d)))})
}

// roundUp rounds d up to a whole second.
func roundUp(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	id, s := sessionOf(r)
	c.sessions.end(id)
	c.setCookie(w, r, "", -1)
	c.log.Info("console: logout", "approver", s.approver())
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// validName accepts 1 to 64 ASCII letters, digits, spaces and . _ @ -, not
// starting or ending with a space. ASCII only, so that two approvers cannot
// look alike in the audit log.
func validName(s string) bool {
	if s == "" || len(s) > 64 || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(" ._@-", r)
		if !ok {
			return false
		}
	}
	return true
}
