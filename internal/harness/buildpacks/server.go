package buildpacks

import (
	"io"
	"io/fs"
	"log"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

// StaticFiles serves the files of site as Cloud Foundry's staticfile buildpack does by
// default: a directory's index.html for the directory, and 404 Not Found for a directory
// without one (no listings) and for hidden files, such as a .git or .env that an app pushes
// along with its site.
func StaticFiles(site fs.FS) http.Handler {
	return http.FileServerFS(servedFS{site})
}

// servedFS hides from http.FileServerFS what StaticFiles does not serve.
type servedFS struct {
	fs.FS
}

func (s servedFS) Open(name string) (fs.File, error) {
	if hidden(name) {
		return nil, fs.ErrNotExist
	}
	f, err := s.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err == nil && info.IsDir() && !s.hasIndex(name) {
		f.Close()
		return nil, fs.ErrNotExist
	}
	return f, nil
}

func (s servedFS) hasIndex(dir string) bool {
	info, err := fs.Stat(s.FS, path.Join(dir, "index.html"))
	return err == nil && !info.IsDir()
}

// hidden reports whether a name of the file system (fs.ValidPath) is or is under a hidden
// file.
func hidden(name string) bool {
	return slices.ContainsFunc(strings.Split(name, "/"), func(element string) bool {
		return element != "." && strings.HasPrefix(element, ".")
	})
}

// LogRequests logs a line for each request that next serves to out: method, URI, status,
// bytes written and duration.
func LogRequests(next http.Handler, out io.Writer) http.Handler {
	logger := log.New(out, "", 0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		recorder := &responseRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(recorder, r)
		logger.Printf("%s %s %d %d %s", r.Method, r.URL.RequestURI(), recorder.status, recorder.bytes, time.Since(start).Round(time.Microsecond))
	})
}

// responseRecorder notes the status and size of a response.
type responseRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (r *responseRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}
