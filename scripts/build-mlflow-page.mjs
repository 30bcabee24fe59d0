// Bundles the script that the MLflow proxy adds to MLflow's pages (the run page's Logs tab,
// src/mlflow-page/) into one file the Python package ships: jupyter_air/static/mlflow-page.js.
// Its input is what `tsc` compiled into lib/ (type-checked, strict); Rspack (which
// @jupyter/builder already uses) joins the modules into one script for the browser.
// Usage: node scripts/build-mlflow-page.mjs [--development]
import { rspack } from '@rspack/core';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const development = process.argv.includes('--development');

const compiler = rspack({
  context: root,
  mode: development ? 'development' : 'production',
  devtool: development ? 'inline-source-map' : false,
  target: ['web', 'es2020'],
  entry: { 'mlflow-page': './lib/mlflow-page/index.js' },
  output: {
    path: path.join(root, 'jupyter_air', 'static'),
    filename: '[name].js',
    clean: true,
    iife: true
  },
  optimization: { splitChunks: false, runtimeChunk: false },
  performance: { hints: false },
  infrastructureLogging: { level: 'error' },
  stats: 'errors-warnings'
});

compiler.run((error, stats) => {
  compiler.close(() => {});
  if (error) {
    console.error(error);
    process.exit(1);
  }
  if (stats.hasErrors() || stats.hasWarnings()) {
    console.error(stats.toString('errors-warnings'));
  }
  if (stats.hasErrors()) {
    process.exit(1);
  }
  const file = path.join('jupyter_air', 'static', 'mlflow-page.js');
  const size = stats.toJson({ assets: true }).assets?.[0]?.size ?? 0;
  console.log(`${file}: ${Math.round(size / 1024)} KiB`);
});
