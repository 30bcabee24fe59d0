import 'uplot/dist/uPlot.min.css';
import './common.css';
import './base.css';
import './mlflow.css';
import './workloads.css';
import './logs.css';
