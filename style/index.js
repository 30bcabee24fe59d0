import 'uplot/dist/uPlot.min.css';
import './common.css';
import './base.css';
import './gpu-cluster.css';
import './mlflow.css';
import './workloads.css';
import './logs.css';
