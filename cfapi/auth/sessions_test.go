package auth

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the sessions remembered", func() {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	key := func(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }
	session := func(user string) *Session { return &Session{Identity: Identity{Name: user}} }

	It("keeps the other users' sessions however many credentials one user brings", func() {
		c := newSessionCache(100, 8)
		alice, bob := session("alice"), session("bob")
		c.add(key("alice"), alice, now.Add(time.Hour))
		c.add(key("bob"), bob, now.Add(time.Hour))
		for i := range 10_000 {
			c.add(key(fmt.Sprint("mallory-", i)), session("mallory"), now.Add(time.Hour))
		}
		Expect(c.get(key("alice"), now)).To(BeIdenticalTo(alice))
		Expect(c.get(key("bob"), now)).To(BeIdenticalTo(bob))
		Expect(c.ofUser).To(HaveKeyWithValue("mallory", 8))
		Expect(c.get(key("mallory-9999"), now)).NotTo(BeNil(), "the user's newest sessions stay")
		Expect(c.get(key("mallory-9991"), now)).To(BeNil(), "the user's oldest go")
	})

	It("forgets the least recently used session when it is full, and an expired one when it is asked for", func() {
		c := newSessionCache(2, 8)
		c.add(key("a"), session("a"), now.Add(time.Hour))
		c.add(key("b"), session("b"), now.Add(time.Minute))
		Expect(c.get(key("a"), now)).NotTo(BeNil())
		c.add(key("c"), session("c"), now.Add(time.Hour))
		Expect(c.get(key("b"), now)).To(BeNil(), "b was used least recently")
		Expect(c.get(key("a"), now)).NotTo(BeNil())
		Expect(c.get(key("c"), now.Add(2*time.Hour))).To(BeNil(), "expired")
		Expect(c.byKey).To(HaveLen(1))
		Expect(c.ofUser).To(Equal(map[string]int{"a": 1}))
	})
})

var _ = Describe("the key of credentials", func() {
	It("is the same however the header spells them, and another for other credentials", func() {
		keyOf := func(header string) [sha256.Size]byte {
			GinkgoHelper()
			creds, err := read(header)
			Expect(err).NotTo(HaveOccurred())
			return creds.key
		}
		Expect(keyOf("bearer abc")).To(Equal(keyOf("Bearer abc")))
		Expect(keyOf("BEARER      abc  ")).To(Equal(keyOf("Bearer abc")))
		Expect(keyOf("Bearer abd")).NotTo(Equal(keyOf("Bearer abc")))
		Expect(keyOf("ClientCert YWJj")).To(Equal(keyOf("clientcert YW\r\nJj")), "line breaks in base64")
		Expect(keyOf("ClientCert YWJj")).NotTo(Equal(keyOf("Bearer abc")))
	})

	It("is not made of credentials longer than any a user has", func() {
		_, err := read("Bearer " + strings.Repeat("a", maxCredentials))
		Expect(err).To(MatchError(ContainSubstring("the credentials are longer than 32768 bytes")))
	})
})
