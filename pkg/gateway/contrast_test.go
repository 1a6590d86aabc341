package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// lowContrastJS lists the visible text on the page whose colour, after the
// opacity of its ancestors and against the backgrounds behind it, falls
// below WCAG AA: 4.5:1, or 3:1 for large text (24px, or 18.66px bold).
const lowContrastJS = `(() => {
  const rgba = (s) => { const m = s.match(/[\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, under) => { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1); };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
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
  const bad = [];
  for (const el of document.querySelectorAll("body *")) {
    const text = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join("").trim();
    if (!text) continue;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1 || r.right <= 0 || el.closest("[hidden], dialog:not([open])")) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden") continue;
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
    const bg = background(el);
    const fg = rgba(style.color);
    const ink = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
    const [hi, lo] = [lum(ink), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
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
