// CSS modules under Jest: every class name is its own key (`styles.panel` is "panel"), so server
// components that import a .module.css render with stable, readable class names.
module.exports = new Proxy({}, { get: (_target, key) => (key === '__esModule' ? false : String(key)) });
