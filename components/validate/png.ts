/**
 * SVG → PNG with @resvg/resvg-js (a prebuilt native binary shipped inside the npm package; nothing is
 * downloaded at install time). Loaded lazily: where the package is missing the caller gets `null` and keeps the SVG.
 */
export function svgToPng(svg: string): Buffer | null {
    let mod: { Resvg: new (svg: string, opts?: object) => { render(): { asPng(): Buffer } } };
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        mod = require("@resvg/resvg-js");
    } catch {
        return null;
    }
    // system fonts (DejaVu on Debian/Ubuntu) render the labels; without fonts the lines still render
    const r = new mod.Resvg(svg, { background: "#ffffff", font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans" } });
    return r.render().asPng();
}
