import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import prettierRecommended from 'eslint-plugin-prettier/recommended';
import globals from 'globals';
import jupyterPlugin from '@jupyter/eslint-plugin';

export default defineConfig([
  {
    ignores: [
      'node_modules',
      'dist',
      'coverage',
      'lib',
      'jupyter_air',
      'bench',
      '**/*.js',
      '**/*.d.ts',
      '.venv',
      '.jupyter-test',
      'ui-tests'
    ]
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  jupyterPlugin.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      globals: {
        ...globals.browser,
        ...globals.es2015,
        ...globals.node
      },
      parserOptions: {
        // the jest specs are linted too: this one includes them
        project: 'tsconfig.eslint.json',
        sourceType: 'module'
      }
    },
    rules: {
      '@typescript-eslint/naming-convention': [
        'error',
        {
          selector: 'interface',
          format: ['PascalCase'],
          custom: {
            regex: '^I[A-Z]',
            match: true
          }
        }
      ],
      '@typescript-eslint/no-unused-vars': ['warn', { args: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/no-use-before-define': 'off',
      // the side panels and the MLflow status service exist from the start (a sidebar tab, a
      // service other plugins require): their modules load with the application
      'jupyter/prefer-lazy-imports': [
        'warn',
        {
          ignoreImports: [
            '../experiments/model',
            '../experiments/panel',
            '../gpu/model',
            '../gpu/panel',
            '../mlflow/status',
            '../mlflow/ui-opener',
            '../mlflow/run-renderer',
            '../workloads/job-model',
            '../workloads/model',
            '../workloads/panel',
            '../workloads/schedules-model'
          ]
        }
      ],
      curly: ['error', 'all'],
      eqeqeq: 'error',
      'prefer-arrow-callback': 'error'
    }
  },
  {
    // the Logs tab on MLflow's run page runs outside JupyterLab: no translator there
    files: ['src/mlflow-page/**/*.ts'],
    rules: { 'jupyter/no-untranslated-string': 'off' }
  },
  {
    files: ['scripts/**/*.mjs'],
    languageOptions: { globals: { ...globals.node } }
  },
  prettierRecommended
]);
