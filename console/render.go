package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"path"
	"time"
)

//go:embed assets
var assets embed.FS

// pages are the parsed templates: each page is assets/<name>.html with
// the layout.
type pages struct {
	byName map[string]*template.Template
}

var pageNames = []string{"off", "signin", "error", "list", "key", "tools", "approvals"}

func parsePages() (*pages, error) {
	funcs := template.FuncMap{"ms": formatMs, "ago": ago}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(assets, "assets/"+n+".html")
		if err != nil {
			return nil, err
		}
		p.byName[n] = t
	}
	return p, nil
}

// render writes page name with data, rendered whole before anything is
// sent, so a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := c.pages.byName[name].ExecuteTemplate(&b, "layout.html", data); err != nil {
		c.cfg.Logger.Error("console: page not rendered", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

type errorData struct {
	Status  int
	Message string
}

// fail answers a page that says what went wrong.
func (c *Console) fail(w http.ResponseWriter, status int, msg string) {
	c.render(w, status, "error", errorData{Status: status, Message: msg})
}

// static serves the stylesheet and the script.
func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	types := map[string]string{"style.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}
	ct, ok := types[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := assets.ReadFile(path.Join("assets", name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

// formatMs shows a unix-ms time in UTC; "-" for none.
func formatMs(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 MST")
}

// ago shows a duration in milliseconds rounded to what a person reads.
func ago(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < 0:
		return "-"
	case d < time.Minute:
		return d.Truncate(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}
