//go:build ignore

// Command rename28 rewrites Go source for the renames of the house-style
// change, so that a branch written against the old names can be brought
// onto the new ones after merging it (run it from the repository root,
// then gofmt and build):
//
//	go run scripts/rename28/main.go [dir ...]    (default: .)
//
// It is idempotent and touches only what still uses an old name:
//   - topics.X for the wire contract becomes wire.X; topics keeps Names,
//     NamesWithPrefix and DefaultPrefix;
//   - topics.StatusX, topics.ReasonX and topics.Terminal become codes.X (one
//     spelling per status), also bare inside package wire;
//   - the package view becomes overlay (its import path and view.X);
//   - in executor/partition, the type tick (the work of one Step) becomes
//     stepper, and its methods' receiver t becomes s;
//   - comments: the same renames of topics.X, view.X and the doc links;
//   - Markdown files: those renames, and the paths of the moved files
//     (topics/*.go but names.go and doc.go, view/*.go) and stepper's methods.
//
// The imports of each rewritten file are added or dropped to match, and
// the file is gofmt-ed.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

const mod = "github.com/atmostonce/toolexec/"

var stayInTopics = map[string]bool{"Names": true, "NamesWithPrefix": true, "DefaultPrefix": true}

func toCodes(name string) bool {
	return name == "Terminal" || regexp.MustCompile(`^(Status|Reason)[A-Z]`).MatchString(name)
}

func main() {
	roots := os.Args[1:]
	if len(roots) == 0 {
		roots = []string{"."}
	}
	failed := false
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "vendor" || d.Name() == "testdata" || d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == ".venv" || path == filepath.Join(root, "scripts", "rename28")) {
				return filepath.SkipDir
			}
			if d.IsDir() {
				return nil
			}
			switch filepath.Ext(path) {
			case ".go":
				err = rewrite(path)
			case ".md":
				err = rewriteDoc(path)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
				failed = true
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func rewrite(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return err
	}
	dir := filepath.ToSlash(filepath.Dir(filepath.Clean(path)))
	r := &rewriter{f: f, used: map[string]bool{}}
	r.packageClause(dir)
	r.selectors()
	if dir == "wire" || strings.HasSuffix(dir, "/wire") {
		r.bareCodes()
	}
	if strings.HasSuffix(dir, "executor/partition") {
		r.stepper()
	}
	r.comments()
	if !r.changed {
		return nil
	}
	r.imports()
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return err
	}
	out, err := format.Source(buf.Bytes())
	if err != nil {
		return fmt.Errorf("gofmt: %w", err)
	}
	if bytes.Equal(out, src) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}

type rewriter struct {
	f       *ast.File
	changed bool
	used    map[string]bool // packages this file now names: "wire", "codes", "overlay", "topics"
}

// packageClause renames the package of the files that moved.
func (r *rewriter) packageClause(dir string) {
	base := dir[strings.LastIndex(dir, "/")+1:]
	rename := map[string]map[string]string{
		"wire":    {"topics": "wire", "topics_test": "wire_test"},
		"overlay": {"view": "overlay", "view_test": "overlay_test"},
	}[base]
	if to, ok := rename[r.f.Name.Name]; ok {
		r.f.Name.Name = to
		r.changed = true
	}
}

// localName is the name a file gives the import of path, "" when it does
// not import it.
func (r *rewriter) localName(path string) string {
	for _, is := range r.f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		if p != path {
			continue
		}
		if is.Name != nil {
			return is.Name.Name
		}
		return path[strings.LastIndex(path, "/")+1:]
	}
	return ""
}

// selectors rewrites topics.X and view.X where the X is the package (an
// identifier that resolves to nothing in the file).
func (r *rewriter) selectors() {
	topics, view := r.localName(mod+"topics"), r.localName(mod+"view")
	ast.Inspect(r.f, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := s.X.(*ast.Ident)
		if !ok || x.Obj != nil {
			return true
		}
		switch {
		case topics != "" && x.Name == topics:
			switch {
			case stayInTopics[s.Sel.Name]:
				r.used["topics"] = true
				return true
			case toCodes(s.Sel.Name):
				x.Name = "codes"
			default:
				x.Name = "wire"
			}
			r.used[x.Name] = true
			r.changed = true
		case view != "" && x.Name == view:
			x.Name = "overlay"
			r.used["overlay"] = true
			r.changed = true
		case x.Name == "codes" || x.Name == "wire" || x.Name == "overlay":
			r.used[x.Name] = true
		}
		return true
	})
}

// bareCodes qualifies the statuses and reasons package wire named bare
// when it re-exported them.
func (r *rewriter) bareCodes() {
	declared := map[*ast.Ident]bool{}
	for _, d := range r.f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			declared[fd.Name] = true
		}
		if gd, ok := d.(*ast.GenDecl); ok {
			for _, s := range gd.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok {
					for _, n := range vs.Names {
						declared[n] = true
					}
				}
			}
		}
	}
	var sels = map[*ast.Ident]bool{}
	ast.Inspect(r.f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			sels[s.Sel] = true
		}
		return true
	})
	ast.Inspect(r.f, func(n ast.Node) bool {
		// Rewrite in place: an Ident cannot become a SelectorExpr, so the
		// qualified name is written into the Ident ("codes.X" prints as is).
		id, ok := n.(*ast.Ident)
		if !ok || id.Obj != nil || declared[id] || sels[id] || !toCodes(id.Name) {
			return true
		}
		id.Name = "codes." + id.Name
		r.used["codes"] = true
		r.changed = true
		return true
	})
}

// stepper renames executor/partition's type tick and its receivers.
func (r *rewriter) stepper() {
	var recvs []*ast.Object
	for _, d := range r.f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
			continue
		}
		star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		if id, ok := star.X.(*ast.Ident); ok && id.Name == "tick" && len(fd.Recv.List[0].Names) == 1 {
			recvs = append(recvs, fd.Recv.List[0].Names[0].Obj)
		}
	}
	sels := map[*ast.Ident]bool{}
	methods := map[*ast.Ident]bool{}
	ast.Inspect(r.f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sels[n.Sel] = true
		case *ast.FuncDecl:
			methods[n.Name] = true
		}
		return true
	})
	ast.Inspect(r.f, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || sels[id] || methods[id] {
			return true
		}
		switch {
		case id.Name == "tick" && (id.Obj == nil || id.Obj.Kind == ast.Typ):
			id.Name = "stepper"
			r.changed = true
		case id.Name == "t" && id.Obj != nil && contains(recvs, id.Obj):
			id.Name = "s"
			r.changed = true
		}
		return true
	})
}

func contains(objs []*ast.Object, o *ast.Object) bool {
	for _, x := range objs {
		if x == o {
			return true
		}
	}
	return false
}

var (
	// topics.X in a comment or doc link, X not one that stays.
	commentTopics = regexp.MustCompile(`\btopics\.([A-Z][A-Za-z0-9]*)`)
	commentView   = regexp.MustCompile(`\bview\.([A-Z][A-Za-z0-9]*)`)
)

// renameRefs renames topics.X (but the names that stay, and
// topicadmin's Ensure, which prose calls topics.Ensure) and view.X in
// prose: a comment or a Markdown file.
func renameRefs(text string) string {
	text = commentTopics.ReplaceAllStringFunc(text, func(m string) string {
		name := m[len("topics."):]
		switch {
		case stayInTopics[name] || name == "Ensure":
			return m
		case toCodes(name):
			return "codes." + name
		}
		return "wire." + name
	})
	return commentView.ReplaceAllString(text, "overlay.$1")
}

func (r *rewriter) comments() {
	for _, cg := range r.f.Comments {
		for _, c := range cg.List {
			text := renameRefs(c.Text)
			text = strings.ReplaceAll(text, " a overlay.", " an overlay.")
			text = strings.ReplaceAll(text, " a [overlay.", " an [overlay.")
			if text == "// tick is the work of one Step." {
				text = "// stepper holds the work of one Step: the decisions of one tick (the\n// executor loop's poll, decide, commit) while it is being made."
			}
			if text != c.Text {
				c.Text = text
				r.changed = true
			}
		}
	}
}

// imports adds the imports the rewritten file now needs and drops those
// it no longer uses.
func (r *rewriter) imports() {
	var decl *ast.GenDecl
	for _, d := range r.f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			decl = gd
			break
		}
	}
	if decl == nil {
		return
	}
	have := map[string]*ast.ImportSpec{}
	var anchor *ast.ImportSpec
	for _, s := range decl.Specs {
		is := s.(*ast.ImportSpec)
		p, _ := strconv.Unquote(is.Path.Value)
		have[p] = is
		if strings.HasPrefix(p, mod) && anchor == nil {
			anchor = is
		}
	}
	// Drop topics, codes and view where nothing names them any more.
	var keep []ast.Spec
	for _, s := range decl.Specs {
		is := s.(*ast.ImportSpec)
		p, _ := strconv.Unquote(is.Path.Value)
		if (p == mod+"topics" && !r.used["topics"]) || (p == mod+"codes" && !r.used["codes"]) || p == mod+"view" {
			delete(have, p)
			continue
		}
		keep = append(keep, s)
	}
	decl.Specs = keep
	for _, pkg := range []string{"codes", "wire", "overlay"} {
		if !r.used[pkg] || have[mod+pkg] != nil || r.f.Name.Name == pkg {
			continue
		}
		pos := decl.Lparen
		if anchor != nil {
			pos = anchor.Path.ValuePos
		}
		decl.Specs = append(decl.Specs, &ast.ImportSpec{Path: &ast.BasicLit{Kind: token.STRING, Value: strconv.Quote(mod + pkg), ValuePos: pos}})
	}
	if len(decl.Specs) > 1 && !decl.Lparen.IsValid() {
		decl.Lparen = decl.Pos()
	}
}

var (
	docTopicsPath = regexp.MustCompile("\\btopics/([a-z_]+\\.go|testdata)")
	docViewPath   = regexp.MustCompile("\\bview/([a-z_]+\\.go)")
	docStepper    = regexp.MustCompile("\\btick\\.(input|load|act|emit|answer|startCall|reject|isolate|deadLetter|complete|completeRead|readPending|sweep|fatal|snapshotStep|restate|endRound|restateReads)\\b")
)

// rewriteDoc applies the renames to a Markdown file.
func rewriteDoc(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(src)
	text = docTopicsPath.ReplaceAllStringFunc(text, func(m string) string {
		if m == "topics/names.go" || m == "topics/doc.go" {
			return m
		}
		return "wire/" + m[len("topics/"):]
	})
	text = docViewPath.ReplaceAllString(text, "overlay/$1")
	text = docStepper.ReplaceAllString(text, "stepper.$1")
	text = renameRefs(text)
	text = strings.ReplaceAll(text, "a `overlay.", "an `overlay.")
	if text == string(src) {
		return nil
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
