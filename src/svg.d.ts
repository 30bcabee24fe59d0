// SVG files are imported as strings (JupyterLab's webpack config and jest's raw loader).
declare module '*.svg' {
  const value: string;
  export default value;
}
