// MathJax for the \( \) and \[ \] spans that pymdownx.arithmatex (generic mode) emits. The
// MathJax script itself (javascripts/mathjax/tex-svg.js) is served with the site.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};

// With Material's instant navigation a new page's formulas are typeset on each page
// change. Before MathJax has loaded (or if it failed to load) there is nothing to reset:
// MathJax typesets the first page itself once it starts.
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    const mathjax = window.MathJax;
    if (!mathjax || !mathjax.startup || typeof mathjax.typesetPromise !== "function") {
      return;
    }
    // The CHTML output has a font cache to clear; the SVG output served here has none.
    const output = mathjax.startup.output;
    if (output && typeof output.clearCache === "function") {
      output.clearCache();
    }
    mathjax.typesetClear();
    mathjax.texReset();
    mathjax.typesetPromise();
  });
}
