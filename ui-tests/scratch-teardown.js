/**
 * Playwright's global teardown: removes the folder the browser tests wrote their files into
 * (playwright.config.js makes it, once per run, in the machine's temporary folder).
 */
const fs = require('fs');

module.exports = async () => {
  if (process.env.AIR_UI_SCRATCH) {
    fs.rmSync(process.env.AIR_UI_SCRATCH, { recursive: true, force: true });
  }
};
