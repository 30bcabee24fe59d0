const jestJupyterLab = require('@jupyterlab/testutils/lib/jest-config');

const esModules = [
  '@codemirror',
  '@jupyter/ydoc',
  '@jupyter/react-components',
  '@jupyter/web-components',
  '@microsoft',
  '@jupyterlab/',
  'exenv-es6',
  'lib0',
  'nanoid',
  'vscode-ws-jsonrpc',
  'y-protocols',
  'y-websocket',
  'yjs'
].join('|');

const baseConfig = jestJupyterLab(__dirname);

module.exports = {
  ...baseConfig,
  automock: false,
  // the base config also writes junit.xml (jest-junit); the console is enough here
  reporters: ['default'],
  collectCoverageFrom: ['src/**/*.{ts,tsx}', '!src/**/*.d.ts'],
  coverageReporters: ['lcov', 'text'],
  testRegex: 'src/.*/.*.spec.ts[x]?$',
  modulePathIgnorePatterns: [
    '<rootDir>/jupyter_air/labextension',
    '<rootDir>/ui-tests',
    '<rootDir>/.venv',
    '<rootDir>/.jupyter-test'
  ],
  transformIgnorePatterns: [`/node_modules/(?!${esModules}).+`]
};
