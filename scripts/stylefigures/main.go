// Command stylefigures prints the structural figures the house-style
// review tracks, measured from the source of the working tree (test files
// are left out of every figure):
//
//	go run ./scripts/stylefigures                 the Executor type and executor/'s file graph
//	go run ./scripts/stylefigures -dir view       the file graph of another package
//
// Executor: its fields, its methods and the files that hold them, and for
// each field the files that name it.
//
// File graph: file A "imports" file B of the same package when A names a
// package-level identifier (func, type, var, const) or a method declared in
// B. By default a name counts wherever it stands, so that a selector such as
// errors.New or a local variable that shares a declared name counts too;
// with -types the names are resolved by go/types (imports left
// unresolved), and only a use of the package's own declaration counts:
//
//	go run ./scripts/stylefigures -types
//
// The files are ordered by the Eades-Lin-Smyth heuristic for a minimum
// feedback arc set (ties broken by name, so the order is reproducible): an
// arrow "runs back up" when it points from a file earlier in that order to a
// later one, that is, against the layering. Arrows inside a cycle of files
// (a strongly connected component) are counted too, since no layering can
// put both ends of such an arrow in order.
//
// Two figures of the whole tree:
//
//	go run ./scripts/stylefigures -history .    comment lines that tell history (exit 1 on any: scripts/test runs it)
//	go run ./scripts/stylefigures -words .      type names declared in more than one package
//
// History is an issue or finding number, "before the fix", a review's item
// label (D1), a seed, who found a bug, a commit, "X used to": house.go
// lists the phrasings, each with its reason.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := flag.String("dir", "executor", "package directory for the file graph")
	typ := flag.String("type", "Executor", "type whose fields and methods are counted")
	typed := flag.Bool("types", false, "resolve names with go/types: only uses of the package's own declarations are arrows")
	history := flag.String("history", "", "check the comments of every .go file under this root for history; exit 1 on a hit")
	words := flag.String("words", "", "list the type names declared in more than one package under this root")
	flag.Parse()
	if *history != "" {
		reportHistory(*history)
		return
	}
	if *words != "" {
		reportWords(*words)
		return
	}
	fset := token.NewFileSet()
	files, err := parseDir(fset, *dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reportType(files, *typ)
	edges := nameEdges(files)
	if *typed {
		edges = typedEdges(fset, files)
	}
	reportGraph(files, edges)
}

type file struct {
	name string
	ast  *ast.File
}

func parseDir(fset *token.FileSet, dir string) ([]file, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []file
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		out = append(out, file{name: filepath.Base(n), ast: f})
	}
	return out, nil
}

func reportType(files []file, typ string) {
	var fields []string
	methods := map[string][]string{}
	nmethods := 0
	for _, f := range files {
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				fields = append(fields, structFields(d, typ)...)
			case *ast.FuncDecl:
				if receiverType(d) == typ {
					methods[f.name] = append(methods[f.name], d.Name.Name)
					nmethods++
				}
			}
		}
	}
	if len(fields) == 0 && nmethods == 0 {
		return
	}
	fmt.Printf("%s: %d fields, %d methods in %d files\n", typ, len(fields), nmethods, len(methods))
	for _, n := range sortedKeys(methods) {
		fmt.Printf("  methods in %-16s %d\n", n, len(methods[n]))
	}
	fmt.Printf("%s fields and the files that name them (as a selector .field):\n", typ)
	for _, fld := range fields {
		fmt.Printf("  %-22s %s\n", fld, strings.Join(filesNaming(files, fld), " "))
	}
}

func structFields(d *ast.GenDecl, typ string) []string {
	var out []string
	for _, s := range d.Specs {
		ts, ok := s.(*ast.TypeSpec)
		if !ok || ts.Name.Name != typ {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, f := range st.Fields.List {
			if len(f.Names) == 0 {
				out = append(out, fmt.Sprint(f.Type))
			}
			for _, n := range f.Names {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

func receiverType(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func filesNaming(files []file, sel string) []string {
	var out []string
	for _, f := range files {
		found := false
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == sel {
				found = true
			}
			return !found
		})
		if found {
			out = append(out, f.name)
		}
	}
	return out
}

// nameEdges are the arrows between files by name: a file names what
// another declares, wherever the name stands.
func nameEdges(files []file) map[string]map[string]bool {
	defs := map[string]string{} // identifier or method name -> declaring file
	for _, f := range files {
		for _, name := range declared(f.ast) {
			defs[name] = f.name
		}
	}
	edges := map[string]map[string]bool{}
	for _, f := range files {
		edges[f.name] = map[string]bool{}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			var name string
			switch n := n.(type) {
			case *ast.Ident:
				name = n.Name
			case *ast.SelectorExpr:
				name = n.Sel.Name
			default:
				return true
			}
			if to, ok := defs[name]; ok && to != f.name {
				edges[f.name][to] = true
			}
			return true
		})
	}
	return edges
}

// typedEdges are the arrows between files by what go/types resolves each
// name to: a package-level object or a method of the package, declared in
// another file. Imports are not read (stubImporter): names of other
// packages resolve to nothing, which is what the graph wants.
func typedEdges(fset *token.FileSet, files []file) map[string]map[string]bool {
	asts := make([]*ast.File, len(files))
	for i, f := range files {
		asts[i] = f.ast
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: stubImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check(files[0].ast.Name.Name, fset, asts, info)
	edges := map[string]map[string]bool{}
	for _, f := range files {
		edges[f.name] = map[string]bool{}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := info.Uses[id]
			if obj == nil || obj.Pkg() != pkg || !(obj.Parent() == pkg.Scope() || isMethod(obj)) {
				return true
			}
			if to := filepath.Base(fset.Position(obj.Pos()).Filename); to != f.name {
				edges[f.name][to] = true
			}
			return true
		})
	}
	return edges
}

func isMethod(obj types.Object) bool {
	fn, ok := obj.(*types.Func)
	return ok && fn.Type().(*types.Signature).Recv() != nil
}

// stubImporter gives every import an empty package.
type stubImporter struct{}

func (stubImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}

// reportGraph prints the file graph's arrows, those inside cycles and
// those that run back up.
func reportGraph(files []file, edges map[string]map[string]bool) {
	total := 0
	for _, m := range edges {
		total += len(m)
	}
	order := elsOrder(edges)
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	comp := sccs(edges)
	var back, cyc []string
	for _, from := range sortedKeys(edges) {
		for _, to := range sortedKeys(edges[from]) {
			if pos[from] > pos[to] {
				back = append(back, from+" -> "+to)
			}
			if comp[from] == comp[to] {
				cyc = append(cyc, from+" -> "+to)
			}
		}
	}
	fmt.Printf("file graph: %d files, %d arrows, %d inside cycles of files, %d run back up\n", len(files), total, len(cyc), len(back))
	fmt.Println("  layering, top first:", strings.Join(order, " "))
	for _, b := range back {
		fmt.Println("  back up:", b)
	}
}

func declared(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != "init" && d.Name.Name != "_" {
				out = append(out, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					out = append(out, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name != "_" {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// elsOrder orders the nodes so that most arrows point from an earlier
// node to a later one (Eades, Lin and Smyth, 1993): sinks go to the end,
// sources to the front, otherwise the node with the largest out-degree
// minus in-degree goes to the front.
func elsOrder(edges map[string]map[string]bool) []string {
	left := map[string]bool{}
	for n := range edges {
		left[n] = true
	}
	deg := func(n string) (in, out int) {
		for to := range edges[n] {
			if left[to] {
				out++
			}
		}
		for from := range left {
			if edges[from][n] {
				in++
			}
		}
		return in, out
	}
	var front, back []string
	for len(left) > 0 {
		progress := true
		for progress {
			progress = false
			for _, n := range sortedKeys(left) {
				in, out := deg(n)
				switch {
				case out == 0:
					back = append([]string{n}, back...)
				case in == 0:
					front = append(front, n)
				default:
					continue
				}
				delete(left, n)
				progress = true
			}
		}
		if len(left) == 0 {
			break
		}
		best, bestD := "", -1<<30
		for _, n := range sortedKeys(left) {
			in, out := deg(n)
			if out-in > bestD {
				best, bestD = n, out-in
			}
		}
		front = append(front, best)
		delete(left, best)
	}
	return append(front, back...)
}

// sccs labels each node with its strongly connected component (Tarjan).
func sccs(edges map[string]map[string]bool) map[string]int {
	index, low, comp := map[string]int{}, map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	next, label := 0, 0
	var visit func(string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range sortedKeys(edges[v]) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = label
				if w == v {
					break
				}
			}
			label++
		}
	}
	for _, v := range sortedKeys(edges) {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return comp
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
