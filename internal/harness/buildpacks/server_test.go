package buildpacks_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing/fstest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/cf-hnc/internal/harness/buildpacks"
)

var _ = Describe("the static file server", func() {
	site := fstest.MapFS{
		"index.html":       {Data: []byte("home")},
		"about/index.html": {Data: []byte("about")},
		"css/site.css":     {Data: []byte("body{}")},
		".env":             {Data: []byte("SECRET=1")},
		".git/config":      {Data: []byte("[core]")},
		"docs/.index.html": {Data: []byte("hidden")},
	}

	// get serves a GET of target and returns the response.
	get := func(handler http.Handler, target string) *http.Response {
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, target, nil))
		return recorder.Result()
	}

	DescribeTable("serves files and index pages, and nothing else",
		func(target string, status int, body string) {
			response := get(buildpacks.StaticFiles(site), target)
			Expect(response.StatusCode).To(Equal(status))
			if body != "" {
				Expect(readBody(response)).To(Equal(body))
			}
		},
		Entry("the index page of the site", "/", http.StatusOK, "home"),
		Entry("the index page of a directory", "/about/", http.StatusOK, "about"),
		Entry("a directory without its slash", "/about", http.StatusMovedPermanently, ""),
		Entry("a file", "/css/site.css", http.StatusOK, "body{}"),
		Entry("a file with a query", "/css/site.css?v=2", http.StatusOK, "body{}"),
		Entry("a directory without an index page, unlisted", "/css/", http.StatusNotFound, "404 page not found\n"),
		Entry("a directory with a hidden index page", "/docs/", http.StatusNotFound, ""),
		Entry("a hidden file", "/.env", http.StatusNotFound, ""),
		Entry("a file in a hidden directory", "/.git/config", http.StatusNotFound, ""),
		Entry("a missing file", "/missing.html", http.StatusNotFound, ""),
	)

	It("logs a line for each request", func() {
		var log strings.Builder
		handler := buildpacks.LogRequests(buildpacks.StaticFiles(site), &log)
		get(handler, "/css/site.css?v=2")
		get(handler, "/nothing")
		Expect(log.String()).To(MatchRegexp(`^GET /css/site.css\?v=2 200 6 \S+\nGET /nothing 404 19 \S+\n$`))
	})
})

func readBody(response *http.Response) string {
	GinkgoHelper()
	body, err := io.ReadAll(response.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(body)
}
