package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// historyPhrasings are the ways a comment tells the story of a change
// instead of what the code does: that story belongs in the commit message
// and docs/RELIABILITY.md, where it stays true. Each has the reason it is
// history, printed with every hit.
var historyPhrasings = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`(?i)\bissue #?\d+`), "an issue number"},
	{regexp.MustCompile(`(?i)\bthe issue'?s\b`), "an issue"},
	{regexp.MustCompile(`(?i)\bfinding #?\d+`), "a finding's number"},
	{regexp.MustCompile(`(?i)\b(before|after|until) (the|this) fix\b`), "the code before a fix"},
	{regexp.MustCompile(`\b[DS]\d{1,2}\b`), "a review's item label (D1, S4)"},
	{regexp.MustCompile(`(?i)(--seed[= ]\d+|\bseeds? \d{3,}|\bseed=\d+)`), "a seed that once failed"},
	{regexp.MustCompile(`\b20\d\d(0[1-9]|1[0-2])[0-3]\d\b`), "a date"},
	{regexp.MustCompile(`(?i)\bfound (by|on|in) (the )?(chaos|simulation|sim|fuzz|main|review)`), "who found a bug"},
	{regexp.MustCompile(`(?i)\b(on|at) (commit )?[0-9a-f]{7,40}\b`), "a commit"},
}

// passiveUse are the words before "used to" that make it "is used to do
// X" (what the code does) rather than "X used to happen" (history).
var passiveUse = map[string]bool{"is": true, "are": true, "be": true, "been": true, "being": true,
	"was": true, "were": true, "get": true, "gets": true, "only": true, "also": true, "not": true}

var usedTo = regexp.MustCompile(`(?i)\b(\w+) used to\b`)

// historyHits walks every .go file under root (tests too: a test's comment
// tells its story as easily) and returns "path:line: why: text" for each
// comment line that reads as history.
func historyHits(root string) ([]string, error) {
	var hits []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() && filepath.Base(path) == "stylefigures" { // it quotes the phrasings it looks for
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, g := range f.Comments {
			for _, c := range g.List {
				for i, line := range strings.Split(c.Text, "\n") {
					if why := historyIn(line); why != "" {
						pos := fset.Position(c.Slash)
						hits = append(hits, fmt.Sprintf("%s:%d: %s: %s", rel, pos.Line+i, why, strings.TrimSpace(line)))
					}
				}
			}
		}
		return nil
	})
	return hits, err
}

func historyIn(line string) string {
	for _, p := range historyPhrasings {
		if p.re.MatchString(line) {
			return p.why
		}
	}
	for _, m := range usedTo.FindAllStringSubmatch(line, -1) {
		if !passiveUse[strings.ToLower(m[1])] {
			return `"used to"`
		}
	}
	return ""
}

// reportHistory prints the hits and exits 1 when there are any, so that CI
// can run it as a check.
func reportHistory(root string) {
	hits, err := historyHits(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("history in comments: %d lines\n", len(hits))
	for _, h := range hits {
		fmt.Println("  " + h)
	}
	if len(hits) > 0 {
		os.Exit(1)
	}
}

// reportWords prints the type names declared in more than one package
// under root (test files and the harness's own commands left out), folded
// to lower case so that folder and Folder are one word: a word that names
// two types makes a reader ask which one is meant.
func reportWords(root string) {
	where := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "scripts") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				w := strings.ToLower(s.(*ast.TypeSpec).Name.Name)
				if where[w] == nil {
					where[w] = map[string]bool{}
				}
				where[w][pkg] = true
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var words []string
	for w, pkgs := range where {
		if len(pkgs) > 1 {
			words = append(words, w)
		}
	}
	sort.Strings(words)
	fmt.Printf("type names declared in more than one package: %d\n", len(words))
	for _, w := range words {
		fmt.Printf("  %-20s %s\n", w, strings.Join(sortedKeys(where[w]), " "))
	}
}
