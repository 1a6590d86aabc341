package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// colourJS defines the colour arithmetic the checks share: parsing a CSS
// colour, compositing, WCAG relative luminance and contrast ratio, and the
// background an element's content is seen against.
const colourJS = `
  const rgba = (s) => { const m = s.match(/[\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, under) => { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1); };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const contrast = (fg, bg) => { const [hi, lo] = [lum(over(fg, bg)), lum(bg)].sort((a, b) => b - a); return (hi + 0.05) / (lo + 0.05); };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] === 1) break;
    }
    let bg = rgba(getComputedStyle(document.documentElement).backgroundColor);
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
`

// lowContrastJS lists the visible text on the page whose colour, after the
// opacity of its ancestors (a looping animation's faintest) and against
// the backgrounds behind it, falls below WCAG AA: 4.5:1, or 3:1 for large
// text (24px, or 18.66px bold).
const lowContrastJS = `(() => {` + colourJS + `
  const bad = [];
  for (const el of document.querySelectorAll("body *")) {
    const text = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join("").trim();
    if (!text) continue;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1 || r.right <= 0 || el.closest("[hidden], dialog:not([open])")) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden") continue;
    // A looping animation (a breathing state) is judged at its faintest.
    const faintest = (e) => Math.min(Number(getComputedStyle(e).opacity), ...e.getAnimations()
      .filter((a) => a.effect.getComputedTiming().iterations === Infinity)
      .flatMap((a) => a.effect.getKeyframes().map((k) => k.opacity === undefined ? 1 : Number(k.opacity))));
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) opacity *= faintest(e);
    const fg = rgba(style.color);
    const ratio = contrast([fg[0], fg[1], fg[2], fg[3] * opacity], background(el));
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) bad.push(text.slice(0, 40) + " (" + el.tagName.toLowerCase() + "." + el.className + "): " + ratio.toFixed(2) + ":1");
  }
  return bad;
})()`

// checkContrast fails the test for any text on the page below WCAG AA,
// once the page's finite animations (a strip sliding in, a toast) have
// finished.
func checkContrast(t *testing.T, ctx context.Context, view string) {
	t.Helper()
	settle(t, ctx)
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](lowContrastJS))
	if err != nil {
		t.Fatalf("contrast check: %v", err)
	}
	for _, b := range bad {
		t.Errorf("%s: text below WCAG AA contrast: %s", view, b)
	}
}

// settle waits (bounded) until no finite animation is running, so what is
// checked or captured is the page at rest rather than mid-transition.
func settle(t *testing.T, ctx context.Context) {
	t.Helper()
	for range 100 {
		busy, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`document.getAnimations().some((a) => a.playState === "running" && a.effect.getComputedTiming().iterations !== Infinity)`))
		if err != nil {
			t.Fatalf("waiting for animations: %v", err)
		}
		if !busy {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the page's animations did not finish")
}

// focusRingJS describes the focused element's focus indicator and its
// contrast against what surrounds it (WCAG's 3:1 for non-text): an
// outline of at least 2px, or, for a field that draws none itself, the
// border of the box around it (:focus-within) at 3:1 or more.
const focusRingJS = `(() => {` + colourJS + `
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const label = el.getAttribute("aria-label") || el.id || el.textContent.trim().slice(0, 30);
  const name = el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") + " " + JSON.stringify(label);
  const s = getComputedStyle(el);
  if (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2) {
    // An outline inset into the element is seen against the element;
    // one outside it, against its surroundings.
    const behind = parseFloat(s.outlineOffset) < 0 ? background(el) : background(el.parentElement || el);
    return { name, how: "outline", ratio: contrast(rgba(s.outlineColor), behind) };
  }
  for (let e = el.parentElement, i = 0; e && i < 3; e = e.parentElement, i++) {
    const cs = getComputedStyle(e);
    if (!e.matches(":focus-within") || parseFloat(cs.borderTopWidth) < 1) continue;
    const ratio = contrast(rgba(cs.borderTopColor), background(e.parentElement || e));
    if (ratio >= 3) return { name, how: "border of " + e.className, ratio };
  }
  return { name, how: "none", ratio: 0 };
})()`

// focusRing is what focusRingJS reports.
type focusRing struct {
	Name  string  `json:"name"`
	How   string  `json:"how"`
	Ratio float64 `json:"ratio"`
}

// checkFocus walks the page with the Tab key, as a keyboard user does,
// and fails the test for any stop without a visible focus indicator. It
// returns how many stops it visited, so a caller can check the walk
// reached what it expects.
func checkFocus(t *testing.T, ctx context.Context, view string) int {
	t.Helper()
	// Start from the top of the document, as after loading the page.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const b = document.body; b.tabIndex = -1; b.focus(); b.removeAttribute("tabindex"); window.scrollTo(0, 0); return true })()`)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	stops := 0
	for range 150 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		ring, err := chromedp.Run(ctx, chromedp.Evaluate[*focusRing](focusRingJS))
		if err != nil {
			t.Fatalf("focus check: %v", err)
		}
		if ring == nil { // focus left the page: the walk is complete
			break
		}
		// Stops are told apart by their place in the document.
		path, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const p = []; for (let e = document.activeElement; e && e.parentElement; e = e.parentElement) p.push([...e.parentElement.children].indexOf(e)); return p.join("/") })()`))
		if seen[path] {
			break
		}
		seen[path] = true
		stops++
		if ring.Ratio < 3 {
			t.Errorf("%s: focus on %s is not visible enough (%s, %.2f:1, want 3:1)", view, ring.Name, ring.How, ring.Ratio)
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.activeElement.blur(); return true })()`)); err != nil {
		t.Fatal(err)
	}
	return stops
}
